"""Reading a vcrpy cassette file: vcrpy's JSON serializer, or YAML (with the benign Python tags old
vcrpy cassettes hold), parsed without recursion and with caps on depth and size, so a hostile
file is refused before it costs much."""

from __future__ import annotations

import os
from typing import Any

import orjson

from ...store.cassette import FREE_VALUES, MAX_DEPTH, CassetteError, check_size, read_file

YAML_BYTES_PER_VALUE = 8
"""A YAML file may hold FREE_VALUES values and one more per 8 bytes."""


def _yaml_loader() -> Any:
    """A safe YAML loader that also reads the benign Python tags old vcrpy cassettes contain."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with vcrpy
        raise ImportError("reading a YAML vcrpy cassette needs PyYAML: pip install pyyaml") from exc
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    c_module = getattr(yaml, "_yaml", None)
    if (
        base is not yaml.SafeLoader
        and getattr(c_module, "SequenceStartEvent", None) is not yaml.SequenceStartEvent
    ):
        # yaml was imported again (pytester restores sys.modules) but its C extension cannot be:
        # it would build events of the first import's classes, which this code would not know
        base = yaml.SafeLoader
    loader: Any = type("_VcrLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:python/str", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor("tag:yaml.org,2002:python/unicode", lambda ld, node: ld.construct_scalar(node))
    loader.add_constructor(
        "tag:yaml.org,2002:python/tuple", lambda ld, node: tuple(ld.construct_sequence(node))
    )
    return loader


def load_vcr(path: str | os.PathLike[str]) -> Any:
    """The parsed vcrpy cassette (JSON when it looks like JSON, else YAML).

    Hostile files are refused with CassetteError before they cost much: more values than the
    file's size allows, nesting deeper than `MAX_DEPTH`, unknown tags."""
    raw = read_file(path)
    if raw.lstrip().startswith(b"{"):
        check_size(raw, path=path)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # YAML flow mappings start with "{" too
    try:
        loader = _yaml_loader()
    except ImportError as exc:
        raise CassetteError(str(exc), path=path) from None
    return _load_yaml(raw, loader, path)


def _load_yaml(raw: bytes, loader_class: Any, path: str | os.PathLike[str]) -> Any:
    """The first YAML document of ``raw``, built from the parser's events with an explicit stack:
    no recursion (a 30,000-deep file crashed PyYAML's composer), no node graph (which costs
    ~400 bytes a value), and a cap on depth and on the number of values.

    A scalar with no tag that the loader resolves to a string (quoted, a block, or plain with a
    first character none of its patterns starts with) is its text, as the loader builds it; another
    plain one is resolved and built once per text in a file (a cassette repeats its keys and
    values; the values built are immutable: None, a bool, a number, a date, a string)."""
    import yaml

    limit = FREE_VALUES + len(raw) // YAML_BYTES_PER_VALUE
    loader = loader_class(raw)
    containers: list[tuple[Any, str | None, str | None, list[Any]]] = []  # (container, anchor, tag, key)
    anchors: dict[str, Any] = {}
    plain: dict[str, Any] = {}  # a plain scalar's value, by its text
    # the first characters of the plain scalars the loader may resolve to another type than str
    # (None: a pattern for any text, tried on every plain scalar)
    resolvers = loader.yaml_implicit_resolvers
    resolved = None if None in resolvers else frozenset(resolvers) | {""}
    count = 0
    done, document = False, None
    scalar, alias, sequence = yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)

    def add(value: Any, event: Any) -> None:
        nonlocal done, document
        if not containers:
            done, document = True, value
            return
        container, _, _, key = containers[-1]
        if type(container) is list:
            container.append(value)
        elif not key:
            try:
                hash(value)
            except TypeError:
                raise CassetteError(
                    f"a YAML mapping key is a {type(value).__name__} (line {event.start_mark.line + 1})",
                    path=path,
                ) from None
            key.append(value)
        else:
            container[key.pop()] = value

    def built(event: Any, tag: str) -> Any:
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        try:
            value = loader.construct_object(node)
        except ValueError as exc:  # an integer over Python's 4,300 digits, a bad date
            raise CassetteError(
                f"a YAML value on line {event.start_mark.line + 1} does not convert "
                f"({str(exc).split(';')[0]:.100}): not a vcrpy cassette value; fix or remove it",
                path=path,
            ) from None
        loader.constructed_objects.clear()
        return value

    check_event, get_event = loader.check_event, loader.get_event
    try:
        while not done and check_event():
            event = get_event()
            count += 1
            if count > limit:
                raise CassetteError(
                    f"holds more than {limit:,} YAML values in {len(raw):,} bytes, more than a "
                    f"vcrpy cassette of this size may ({FREE_VALUES:,} and one per "
                    f"{YAML_BYTES_PER_VALUE} bytes)",
                    path=path,
                )
            kind = type(event)
            if kind is scalar:
                tag = event.tag
                if tag is not None and tag != "!":
                    value = built(event, tag)
                elif not event.implicit[0] or (resolved is not None and event.value[:1] not in resolved):
                    value = event.value
                elif event.value in plain:
                    value = plain[event.value]
                else:
                    tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                    value = plain[event.value] = built(event, tag)
                if event.anchor is not None:
                    anchors[event.anchor] = value
                add(value, event)
            elif kind in starts:
                if len(containers) >= MAX_DEPTH:
                    raise CassetteError(
                        f"YAML nested deeper than {MAX_DEPTH} levels (line "
                        f"{event.start_mark.line + 1}): not a vcrpy cassette",
                        path=path,
                    )
                tag = event.tag if event.tag not in (None, "!") else None
                if tag not in _COLLECTION_TAGS and not (tag in _STRING_WRAPPERS and kind is sequence):
                    raise CassetteError(
                        f"unsupported YAML tag {tag} (line {event.start_mark.line + 1})", path=path
                    )
                containers.append(([] if kind is sequence else {}, event.anchor, tag, []))
            elif kind in ends:
                container, anchor, tag, _ = containers.pop()
                value = tuple(container) if tag == _TUPLE else container
                if tag in _STRING_WRAPPERS:
                    value = _wrapped_string(container, tag, event.start_mark.line + 1, path)
                if anchor is not None:
                    anchors[anchor] = value  # only once complete: an alias inside it is an error
                add(value, event)
            elif kind is alias:
                if event.anchor not in anchors:
                    raise CassetteError(
                        f"YAML alias *{event.anchor} refers to no complete anchor (line "
                        f"{event.start_mark.line + 1})",
                        path=path,
                    )
                add(anchors[event.anchor], event)
    except yaml.YAMLError as exc:
        raise CassetteError(
            f"not a vcrpy cassette: YAML does not parse ({exc})".replace("\n", " "), path=path
        ) from None
    finally:
        loader.dispose()
    return document


_TUPLE = "tag:yaml.org,2002:python/tuple"
_COLLECTION_TAGS = {None, "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map", _TUPLE}
_STRING_WRAPPERS = frozenset(
    f"tag:yaml.org,2002:python/object/{how}:{name}"
    for how in ("apply", "new")
    for name in (
        "multidict._multidict.istr",
        "multidict._multidict_py.istr",
        "multidict.istr",
        "multidict._istr.istr",
    )
)
"""Tags of the str subclasses a recorder's header names are (multidict's case-insensitive
``istr``, which aiohttp's headers hold: dd-trace-py's cassettes), applied to one string."""


def _wrapped_string(args: list[Any], tag: str, line: int, path: str | os.PathLike[str]) -> str:
    """The one string a `_STRING_WRAPPERS` tag wraps; anything else under it is refused."""
    if len(args) != 1 or not isinstance(args[0], str):
        raise CassetteError(f"unsupported YAML tag {tag} (line {line}): it wraps no single string", path=path)
    return args[0]

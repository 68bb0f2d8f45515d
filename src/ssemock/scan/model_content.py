"""When a credential-named field is no secret: in what a model generated, or when its value is a
word the interaction's prompt already carries.

A model asked to call ``login(password)`` with "passwords: mellon,radiance" in its prompt writes
``{"password": "mellon"}`` in its tool-call arguments, and the next request sends them back in its
history: the name says credential, but the value is the prompt's own word, in plain text in the
same interaction. So a credential-named field is refused, on its name alone, only outside
model-generated content (tool-call arguments: OpenAI Chat's ``function.arguments``, Responses'
``arguments``, Anthropic's ``partial_json`` and ``tool_use`` ``input``, Gemini's
``functionCall.args``, Bedrock's ``toolUse.input``; in a response or in the history of the next
request); inside it, only when its value looks generated (`looks_random`). And nowhere when its
value is a word of the request's prose. Key shapes (``sk-...``) are found by their shape wherever
they stand: none of this applies to them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import orjson

from .fields import credential_name, looks_random

__all__ = ["exempt", "generated", "path_keys", "prose_words", "raw_exempt", "raw_generated"]

#: members whose value a model wrote: a tool call's arguments (a JSON string or an object), and
#: the JSON text a stream's ``delta`` strings join to (Responses streams arguments so); not a
#: member of a ``delta`` object
_DELTA_TEXT = "delta json"
_GENERATED = frozenset({"arguments", "partial_json", _DELTA_TEXT})
#: members a model wrote only under these parents: Gemini's ``functionCall.args``, Anthropic's
#: ``content[i].input`` (a ``tool_use`` block), Bedrock's ``toolUse.input``; not GraphQL's
#: ``variables.input`` (a login mutation's fields)
_GENERATED_UNDER = {
    "args": frozenset({"functionCall", "function_call"}),
    "input": frozenset({"content", "toolUse", "tool_use"}),
}
_LABELS = re.compile(r"\{[^{}]*\}")  # a piece key's index labels: {index=0}
_PATH_KEY = re.compile(r"\b(delta(?=\s+\$))|([A-Za-z_][A-Za-z0-9_-]*)")  # a delta string's JSON, or a name
_RAW_BACK = 1 << 16  # how far back a raw member's enclosing keys are looked for, at most


def generated(keys: Sequence[str]) -> bool:
    """Whether a member under these keys (outermost first) is in model-generated content."""
    for i, key in enumerate(keys):
        if key in _GENERATED:
            return True
        parents = _GENERATED_UNDER.get(key)
        if parents is not None and i and keys[i - 1] in parents:
            return True
    return False


def path_keys(path: str) -> list[str]:
    """The member names along a finding's path (``event 3 $.choices[0].delta.tool_calls[0].function
    .arguments $.password``, a piece key ``${index=1}.delta.partial_json``), outermost first."""
    plain = re.sub(r"\[\d*\]", "", _LABELS.sub("", path))
    return [_DELTA_TEXT if m.group(1) else m.group(2) for m in _PATH_KEY.finditer(plain)]


def raw_generated(data: bytes, start: int) -> bool:
    """Whether the JSON member whose name's opening quote is at ``start`` in ``data`` (JSON as
    stored) is in model-generated content: the names of the members enclosing it, read backwards
    (strings skipped) until one decides, up to `_RAW_BACK` bytes back."""
    inner = ""  # the name of the member inside the one read last
    depth, i, stop = 0, start - 1, max(0, start - _RAW_BACK)
    while i >= stop:
        c = data[i]
        if c == 0x22:  # a string's closing quote: jump to its opening one
            i = _string_start(data, i, stop)
            if i < 0:
                break
        elif c in (0x7D, 0x5D):  # } ]
            depth += 1
        elif c in (0x7B, 0x5B):  # { [
            if depth:
                depth -= 1
            else:
                name = _name_before(data, i, stop)
                if name in _GENERATED or name in _GENERATED_UNDER.get(inner, ()):
                    return True
                inner = name or inner  # a list's element has no name: its list's is next
        i -= 1
    return False


def _string_start(data: bytes, end: int, stop: int) -> int:
    """Where the string whose closing quote is at ``end`` opens (-1: not within reach)."""
    i = end - 1
    while i >= stop:
        if data[i] == 0x22:
            slashes = 0
            while i - 1 - slashes >= stop and data[i - 1 - slashes] == 0x5C:
                slashes += 1
            if slashes % 2 == 0:
                return i
        i -= 1
    return -1


def _name_before(data: bytes, at: int, stop: int) -> str:
    """The member name before the ``{`` or ``[`` at ``at`` (``"args": {``), or "" (a list element)."""
    m = re.search(rb'"([A-Za-z_][A-Za-z0-9_-]{0,63})"\s*:\s*$', data[max(stop, at - 80) : at])
    return m.group(1).decode("ascii") if m else ""


def prose_words(body: bytes) -> frozenset[str]:
    """The words of a JSON request's prose: its strings with a space in them (a prompt, a message),
    but not one under a credential name nor one that is JSON itself (tool-call arguments)."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return frozenset()
    words: set[str] = set()
    stack: list[object] = [parsed]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack += [v for k, v in value.items() if not credential_name(str(k))]
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, str) and " " in value and value.lstrip()[:1] not in ("{", "["):
            words.update(_WORD.findall(value))
    return frozenset(words)


_WORD = re.compile(r"[^\s,;:!?\"'`()\[\]{}<>]+(?<![.])")


def exempt(value: str, model: Callable[[], bool], prose: Callable[[], frozenset[str]]) -> bool:
    """Whether a credential-named field's ``value`` is no secret: a word of the interaction's
    prose, or, in model-generated content (``model``), a value that does not look generated.
    ``prose`` and ``model`` are worked out only when asked (a finding is rare; a request's prose
    may be long)."""
    text = value.strip()
    if not text:
        return False
    return text in prose() or (not looks_random(text) and model())


def raw_exempt(body: bytes, start: int, end: int, prose: Callable[[], frozenset[str]]) -> bool:
    """`exempt` for the JSON member whose string value is ``body[start:end]`` as stored."""
    try:
        value = orjson.loads(b'"' + body[start:end] + b'"')
    except orjson.JSONDecodeError:
        return False
    name_end = body.rfind(b'"', 0, start - 1)
    return exempt(value, lambda: raw_generated(body, body.rfind(b'"', 0, name_end)), prose)

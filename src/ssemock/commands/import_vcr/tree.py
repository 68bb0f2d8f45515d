"""Importing files, folders and globs in one go: the walk (hidden files left out, a cassette an
earlier run wrote recognised), where each conversion goes, what an existing target means, and
the summary of what was converted, skipped and refused, file by file."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...redaction.rules import find_secrets
from ...store.cassette import VERSION, CassetteError, read_file
from ...store.naming import file_name
from .checks import BODY_EXPANSION, BODY_FREE
from .convert import from_vcr, is_ssemock_cassette, is_vcr_cassette
from .reading import load_vcr

VCR_SUFFIXES = (".yaml", ".yml", ".json")  # what a folder is searched for (vcrpy's serializers)
"""The file suffixes a folder is searched for (vcrpy's serializers)."""
SSEMOCK_SUFFIX = ".ssemock.json"
"""The suffix of the ssemock cassette written beside a vcrpy ``.json`` cassette (whose own name is taken)."""


@dataclass(frozen=True)
class Converted:
    """A vcrpy cassette written as an ssemock cassette."""

    source: Path
    """The vcrpy cassette read."""
    target: Path
    """The ssemock cassette written."""
    interactions: int
    """How many interactions were converted."""
    dropped: tuple[str, ...] = ()  # fields --force dropped: "interaction 2 (POST ...): response.x: why"
    """The fields `--force` dropped, one line each."""
    scrubbed: tuple[str, ...] = ()
    """Secrets --scrub-bodies replaced."""
    note: str | None = None
    """A note on the conversion (such as [`NO_BOUNDARIES`][ssemock.commands.import_vcr.NO_BOUNDARIES]), if any."""


@dataclass(frozen=True)
class Skipped:
    """A file left alone: already an ssemock cassette, converted and unchanged since, or (found
    in a folder) not a vcrpy cassette."""

    source: Path
    """The file skipped."""
    reason: str
    """Why it was skipped."""


@dataclass(frozen=True)
class Refused:
    """A file not converted, and why (the interaction and the field where there is one)."""

    source: Path
    """The vcrpy cassette."""
    reason: str
    """Why it could not be converted."""
    findings: tuple[str, ...] = ()
    """Each secret left, one line each (`ssemock.redaction.rules.find_secrets`), when that is why."""


@dataclass
class ImportSummary:
    """What [`import_paths`][ssemock.commands.import_vcr.import_paths] did, file by file."""

    converted: list[Converted] = field(default_factory=list)
    """The cassettes converted."""
    skipped: list[Skipped] = field(default_factory=list)
    """The files skipped, and why."""
    refused: list[Refused] = field(default_factory=list)
    """The cassettes that could not be converted, and why."""

    @property
    def written(self) -> list[Path]:
        """The ssemock cassettes written."""
        return [c.target for c in self.converted]

    @property
    def ok(self) -> bool:
        """Nothing refused (the command's exit code is 1 otherwise)."""
        return not self.refused

    def add(self, result: Converted | Skipped | Refused) -> None:
        """File ``result`` under its list."""
        if isinstance(result, Converted):
            self.converted.append(result)
        elif isinstance(result, Skipped):
            self.skipped.append(result)
        else:
            self.refused.append(result)

    def counts(self) -> str:
        """``3 converted, 1 skipped, 0 refused``."""
        return f"{len(self.converted)} converted, {len(self.skipped)} skipped, {len(self.refused)} refused"


def _vcr_files(folder: Path) -> list[Path]:
    """The candidate cassettes under ``folder``, recursively, in a stable order (hidden folders
    and files -- .git, a save's temp files -- left out)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found += [
            Path(dirpath, f)
            for f in sorted(filenames)
            if not f.startswith(".") and f.lower().endswith(VCR_SUFFIXES)
        ]
    return found


def _sources(arg: str | os.PathLike[str]) -> tuple[Path, list[tuple[Path, bool]]] | Refused:
    """(the root the output tree mirrors, [(file, named explicitly)]) for one argument: a file,
    a folder (searched recursively) or a glob pattern (``**`` recursive)."""
    path = Path(arg)
    if path.is_dir():
        return path, [(f, False) for f in _vcr_files(path)]
    if os.path.lexists(path):  # a file, or something that is not one (reading it says so)
        return path.parent, [(path, True)]
    text = os.fspath(arg)
    if not glob.has_magic(text):
        return Refused(path, "no such file or folder")
    matches = sorted(glob.glob(text, recursive=True))
    if not matches:
        return Refused(path, "the pattern matches no file")
    parts = Path(text).parts
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    files: list[tuple[Path, bool]] = []
    for match in map(Path, matches):
        if match.is_dir():
            files += [(f, False) for f in _vcr_files(match)]
        elif match.is_file():
            files.append((match, False))
    return root, files


def _target(source: Path, root: Path, out: Path | None, replace_json: bool) -> tuple[Path, str | None]:
    """Where the conversion of ``source`` goes, and a note when the plugin will not find it
    there. pytest-recording's ``cassettes/<module>/<test>.yaml`` becomes
    ``cassettes/<module>/<test>.json``: the path the ssemock plugin looks at by default."""
    stem = source.name[: -len(source.suffix)] if source.suffix.lower() in VCR_SUFFIXES else source.name
    name = file_name(stem)
    folder = source.parent if out is None else out / source.parent.relative_to(root)
    target = folder / name
    if _same_file(target, source) and not replace_json:
        target = folder / (name[: -len(".json")] + SSEMOCK_SUFFIX)
        return target, (
            f"{name} is vcrpy's cassette, so this went to {target.name}; the ssemock plugin "
            f"looks for {name}: import with --replace-json (or --out) to write it there"
        )
    return target, None


def _same_file(a: Path, b: Path) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def _existing(target: Path, source: Path) -> Skipped | Refused | None:
    """What to do when ``target`` exists (None: write it). An ssemock cassette newer than its
    source is up to date; a real recording and a file that is not an ssemock cassette are never
    overwritten."""
    try:
        raw = read_file(target)
        data = orjson.loads(raw) if raw.lstrip().startswith(b"{") else None
    except (CassetteError, orjson.JSONDecodeError):
        data = None
    if not (is_ssemock_cassette(data) or _empty(data)):
        return Refused(
            source, f"{target} exists and is not an ssemock cassette: not overwritten (move it away)"
        )
    if _recorded(data):
        return Skipped(source, f"{target} was recorded by ssemock (it has chunk times): kept")
    if target.stat().st_mtime >= source.stat().st_mtime:
        return Skipped(source, f"up to date: {target} is newer than the vcrpy cassette")
    return None


def _recorded(data: Any) -> bool:
    """Whether an ssemock cassette holds a real recording (an import has every chunk at t=0):
    never replaced by an import, whatever the files' times say (a git checkout sets them)."""
    return any(
        isinstance(pair, list) and pair and pair[0] != 0
        for x in data["interactions"]
        for pair in x["response"].get("chunks") or []
    )


def _empty(data: Any) -> bool:
    """An empty cassette: the same text in vcrpy's JSON and in ssemock's format."""
    return isinstance(data, dict) and data.get("version") == VERSION and data.get("interactions") == []


def _vcr_shaped(data: Any) -> bool:
    """Whether some interaction is vcrpy's ``request``/``response`` mapping (a YAML file found in
    a folder with an ``interactions`` list of another shape is some other tool's file)."""
    items = data if isinstance(data, list) else data["interactions"]
    return not items or any(isinstance(x, dict) and "request" in x and "response" in x for x in items)


def _refusal(source: Path, exc: CassetteError) -> Refused:
    where = "" if exc.interaction is None else f"interaction {exc.interaction}: "
    return Refused(source, where + exc.reason)


def _import_one(
    source: Path,
    target: Path,
    *,
    explicit: bool,
    force: bool,
    scrub_bodies: bool,
    note: str | None = None,
    claimed: dict[str, Path] | None = None,
) -> Converted | Skipped | Refused:
    """Convert one file; ``claimed``: the targets of the files converted so far in this run."""
    try:
        data = load_vcr(source)
    except CassetteError as exc:
        return _refusal(source, exc)
    if is_ssemock_cassette(data):
        return Skipped(source, "already an ssemock cassette")
    if source.suffix.lower() == ".json" and _empty(data):
        return Skipped(source, "an empty cassette (no interactions)")
    if not is_vcr_cassette(data):
        if explicit:
            return Refused(source, "not a vcrpy cassette: no 'interactions' list")
        return Skipped(source, "not a vcrpy cassette")
    if not explicit and not _vcr_shaped(data):  # pydantic-ai's request_stream/response_stream files
        return Skipped(source, "not a vcrpy cassette (no interaction has a 'request' and a 'response')")
    if claimed is not None:
        other = claimed.setdefault(os.path.abspath(target), source)
        if other is not source:
            return Refused(source, f"its target {target} is also the target of {other}: rename one")
    if target.exists() and not _same_file(target, source):
        existing = _existing(target, source)
        if existing is not None:
            return existing
    dropped: list[str] = []
    try:
        size = os.stat(source).st_size
        cassette = from_vcr(
            data, source, max_body_bytes=BODY_FREE + BODY_EXPANSION * size, force=force, dropped=dropped
        )
    except CassetteError as exc:
        return _refusal(source, exc)
    scrubbed: list[str] = []
    if scrub_bodies:
        from .. import redact

        scrubbed = redact(cassette)
    leaks = find_secrets(cassette)
    if leaks:
        return Refused(
            source,
            f"a secret is left after redaction ({len(leaks)} finding{'s' if len(leaks) != 1 else ''}): "
            f"refusing to write {target}",
            tuple(leaks),
        )
    try:
        cassette.save(target, scan_secrets=False)  # scanned just above
    except CassetteError as exc:  # a check at save time refused it
        return _refusal(source, exc)
    except OSError as exc:
        return Refused(source, f"cannot write {target}: {exc.strerror or exc}")
    return Converted(source, target, len(cassette.interactions), tuple(dropped), tuple(scrubbed), note)


def import_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    out: str | os.PathLike[str] | None = None,
    force: bool = False,
    scrub_bodies: bool = False,
    replace_json: bool = False,
) -> ImportSummary:
    """Import every vcrpy cassette that ``paths`` name -- files, folders (searched recursively
    for .yaml, .yml and .json) and glob patterns (``**`` recursive) -- and say what happened to
    each file.

    ``out=None`` writes each cassette beside its source, ``<name>.yaml`` -> ``<name>.json``, so
    pytest-recording's ``cassettes/<module>/<test>.yaml`` lands where the ssemock plugin looks
    by default; ``out=FOLDER`` mirrors the tree under each argument into ``FOLDER``. A vcrpy
    ``.json`` cassette cannot be replaced beside itself: its conversion goes to
    ``<name>.ssemock.json``, unless ``replace_json`` replaces the vcrpy file by it.

    Per file: *skipped* when it is already an ssemock cassette or its conversion is newer than
    it (or, found in a folder, when it is no vcrpy cassette); *refused*, with the file, the
    interaction and the field, when something cannot be carried over (``force`` drops such a
    field and lists it), when a secret is left (``scrub_bodies`` replaces those), or when the
    target exists and is not an ssemock cassette. Nothing is half-written (saves are atomic)."""
    summary = ImportSummary()
    out_dir = None if out is None else Path(out)
    seen: set[str] = set()
    work: list[tuple[Path, bool, Path, str | None]] = []  # (source, named explicitly, target, note)
    for arg in paths:
        found = _sources(arg)
        if isinstance(found, Refused):
            summary.add(found)
            continue
        root, files = found
        for source, explicit in files:
            key = os.path.abspath(source)
            if key not in seen:
                seen.add(key)
                work.append((source, explicit, *_target(source, root, out_dir, replace_json)))
    # a cassette an earlier run wrote, found again in the folder: its source's line tells about it
    targets = {os.path.abspath(t) for s, _, t, _ in work if not _same_file(s, t)}
    claimed: dict[str, Path] = {}
    for source, explicit, target, note in work:
        if not explicit and os.path.abspath(source) in targets:
            continue
        summary.add(
            _import_one(
                source,
                target,
                explicit=explicit,
                force=force,
                scrub_bodies=scrub_bodies,
                note=note,
                claimed=claimed,
            )
        )
    return summary


def import_file(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    force: bool = False,
    scrub_bodies: bool = False,
) -> ImportSummary:
    """Import one vcrpy cassette file to the ssemock cassette ``target`` (as [`import_paths`][ssemock.commands.import_vcr.import_paths])."""
    summary = ImportSummary()
    source_path, target_path = Path(source), Path(target)
    if _same_file(source_path, target_path):
        summary.add(Refused(source_path, "the output is the vcrpy cassette itself: use --replace-json"))
    else:
        summary.add(
            _import_one(source_path, target_path, explicit=True, force=force, scrub_bodies=scrub_bodies)
        )
    return summary

"""``ssemock validate``: the file loads, its bodies decode in their framing, spec oddities, secrets
left behind, incomplete recordings."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..framing.sse import is_event
from ..plan.session_group import groups_of
from ..protocols import versions
from ..redaction.rules import find_secrets
from ..store.cassette import (
    Cassette,
    CassetteError,
)
from ..variants.chunking import event_ends
from .decoding import _BOM, _WHAT, _accumulate, decode_response
from .show import _short
from .show_grpc import call_problems
from .show_websocket import session_problems, session_protocol

Level = Literal["problem", "warning", "note", "detail"]  # detail: shown with -v only


@dataclass
class Finding:
    level: Level
    message: str
    interaction: int | None = None

    def where(self) -> str:
        return "" if self.interaction is None else f"interaction {self.interaction}: "

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "interaction": self.interaction, "message": self.message}


@dataclass
class FileReport:
    """What ``ssemock validate`` found in one file."""

    path: str
    interactions: int = 0
    events: int = 0
    findings: list[Finding] = field(default_factory=list)

    def of(self, level: Level) -> list[Finding]:
        return [f for f in self.findings if f.level == level]

    @property
    def ok(self) -> bool:
        """No problems (warnings and notes allowed)."""
        return not self.of("problem")

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "interactions": self.interactions,
            "events": self.events,
            "problems": [f.to_dict() for f in self.of("problem")],
            "warnings": [f.to_dict() for f in self.of("warning")],
            "notes": [f.to_dict() for f in self.of("note")],
        }


def _has_data_field(block: bytes) -> bool:
    return any(line == b"data" or line.startswith(b"data:") for line in re.split(rb"\r\n|\r|\n", block))


def _sse_oddities(body: bytes, events: Sequence[Any]) -> list[str]:
    """Spec corner cases a recorded SSE body exercises (worth knowing, not wrong)."""
    found = []
    if body.startswith(_BOM):
        found.append(
            "the body starts with a UTF-8 BOM (a conforming decoder strips it; a naive one "
            "sees it in the first field name)"
        )
    bare_cr = len(re.findall(rb"\r(?!\n)", body))
    if bare_cr:
        found.append(f"CR-only line endings ({bare_cr} bare CR): many hand-written decoders split on LF only")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        found.append(f"not valid UTF-8 at byte {exc.start}: a decoder sees U+FFFD there")
    ends = event_ends(body, sse=True)
    tail = body[ends[-1] if ends else 0 :]
    if tail.strip(b"\r\n") and _has_data_field(tail.lstrip(b"\r\n")):
        found.append(
            f"unterminated last event: the last {len(tail)} bytes ({_short(repr(tail), 60)}) have "
            "no blank line after them, so a conforming decoder drops that event"
        )
    done = next((k for k, e in enumerate(events) if is_event(e) and e.data == "[DONE]"), None)
    if done is not None and done < len(events) - 1:
        found.append(
            f"{len(events) - 1 - done} event(s) after [DONE] (event {done}); clients stop reading there"
        )
    return found


def validate_cassette(cassette: Cassette, path: str, *, protocol: str | None = None) -> FileReport:
    """Check a loaded cassette: decodability, spec oddities, secrets, incomplete recordings.

    ``protocol``: accumulate every stream with this protocol instead of detecting one. A stream
    of no known protocol is plain SSE or JSON lines, which is fine: a detail (``-v``), not a warning."""
    report = FileReport(path, len(cassette.interactions))
    add = report.findings.append
    if not cassette.interactions and not cassette.stdio:
        add(Finding("warning", "no interactions"))
    try:  # a session spanning connections: one timeline, no part twice (issue 44 item 2)
        groups_of(cassette.interactions, path)
    except ValueError as exc:
        add(Finding("problem", str(exc).removeprefix(f"ssemock: {path}: ")))
    for i, x in enumerate(cassette.interactions):
        if x.grpc is not None:  # a gRPC call: its own checks (issue 46)
            report.events += len(x.grpc.messages)
            for severity, said in call_problems(x):
                add(Finding(severity, said, i))
            continue
        if x.websocket is not None:  # a WebSocket session: its own checks (issue 34)
            report.events += len(x.websocket.messages)
            for wrong in session_problems(x.websocket):
                add(Finding("problem", wrong, i))
            found, _, problem = session_protocol(x, protocol)
            if problem:
                add(Finding("warning", f"the reference accumulator ({found}) fails: {problem}", i))
            elif found is not None:
                add(Finding("detail", f"protocol {found}", i))
            continue
        resp = x.response
        decoded = decode_response(resp)
        report.events += len(decoded.events)
        if decoded.error is not None:
            add(Finding("problem", f"the body does not decode as {_WHAT[decoded.kind]}: {decoded.error}", i))
        if decoded.kind == "sse":
            for oddity in _sse_oddities(resp.body, decoded.events):
                add(Finding("warning", oddity, i))
            if resp.body.strip() and not decoded.events and resp.complete:
                add(
                    Finding(
                        "problem",
                        f"no SSE event decodes from the {len(resp.body)}-byte body "
                        "(no data field followed by a blank line)",
                        i,
                    )
                )
        if decoded.kind != "other" and decoded.events and 200 <= resp.status < 300:
            found, _, problem = _accumulate(x, decoded, protocol)
            if found is None:
                add(
                    Finding(
                        "detail",
                        f"plain {_WHAT[decoded.kind]}: no known protocol in the URL, content "
                        "type or events (--protocol NAME accumulates it as one)",
                        i,
                    )
                )
            elif problem:
                add(Finding("warning", f"the reference accumulator ({found}) fails: {problem}", i))
            else:
                add(Finding("detail", f"protocol {found}", i))
        elif decoded.kind == "other" and decoded.note:
            add(Finding("note", decoded.note, i))
        elif decoded.kind == "other" and resp.body:
            add(
                Finding(
                    "note",
                    f"status {resp.status}, {resp.header('content-type') or 'no content type'}: "
                    "not a stream, not decoded",
                    i,
                )
            )
        if not resp.complete:
            add(Finding("note", "recorded incomplete (the stream did not end normally)", i))
        if resp.error is not None:
            at = f" at byte {resp.error['at_byte']}" if "at_byte" in resp.error else ""
            add(
                Finding(
                    "note",
                    f"recorded error {resp.error.get('type')}: "
                    f"{resp.error.get('message', '')!r}{at} (replays at the same byte)",
                    i,
                )
            )
    for name, seen in versions(cassette.interactions).items():
        add(Finding("note", f"speaks {name} {', '.join(seen)}"))
    for leak in find_secrets(cassette):
        m = re.match(r"interaction (\d+) (.*)", leak, re.DOTALL)
        add(
            Finding(
                "problem",
                "secret left: " + (m.group(2) if m else leak) + " (run `ssemock redact`)",
                int(m.group(1)) if m else None,
            )
        )
    return report


def validate_file(path: str | os.PathLike[str], *, protocol: str | None = None) -> FileReport:
    """Load and check one cassette file; a load failure is a problem of the report."""
    try:
        cassette = Cassette.load(path)
    except CassetteError as exc:
        return FileReport(str(path), findings=[Finding("problem", exc.reason, exc.interaction)])
    return validate_cassette(cassette, str(path), protocol=protocol)


def cassette_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The cassette files named: files as given, folders searched recursively for ``*.json``
    (sorted; the ``.refused.json`` and ``.partial.json`` files ssemock keeps beside a cassette are
    not cassettes of the suite and are left out of a folder)."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*.json")
                    if p.is_file() and not p.name.endswith((".refused.json", ".partial.json"))
                )
            )
        else:
            found.append(path)
    return found


def format_validation(report: FileReport, *, verbose: bool = False) -> list[str]:
    """One line for a file without problems or warnings; else a header and one line per finding
    (``verbose``: the details too, such as each stream's protocol)."""
    size = (
        f"{report.interactions} interaction{'s' if report.interactions != 1 else ''}, {report.events} events"
    )
    notes = report.of("note") + (report.of("detail") if verbose else [])
    if report.ok and not report.of("warning"):
        tail = "; ".join(f"{n.where()}{n.message}" for n in notes)
        return [f"ok    {report.path} ({size})" + (f" — note: {tail}" if tail else "")]
    head = "FAIL " if not report.ok else "warn "
    lines = [f"{head} {report.path}" + (f" ({size})" if report.interactions else "")]
    levels: tuple[Level, ...] = (
        ("problem", "warning", "note", "detail") if verbose else ("problem", "warning", "note")
    )
    for level in levels:
        for f in report.of(level):
            lines.append(f"  {report.path}: {f.where()}{level}: {f.message}")
    return lines

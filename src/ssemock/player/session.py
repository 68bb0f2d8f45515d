"""A recording session's ends: the player marks itself recording (SIGTERM then unwinds as Ctrl-C
does), and when it stops what was recorded is merged into the cassette and saved under the
cassette's lock (a concurrent writer's interactions are kept), refused when a secret is left in it
(the recording is then kept beside the cassette, masked, for ``ssemock accept``), or kept as a
partial after an interruption: never saved over a good cassette, never lost."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.modes import RecordMode
from ..plan import matching
from ..redaction import keep as _keep
from ..redaction.rules import mask_text
from ..scan.walk import scan_cassette
from ..store.cassette import Cassette, CassetteError, Interaction, SecretError
from ..store.lock import lock_for
from ..store.stdio import StdioSession

__all__ = ["keep_partial", "recording", "recording_players", "save", "stat"]


_RECORDING: weakref.WeakSet[Any] = weakref.WeakSet()  # the Players recording now
_SIGTERM_BEFORE: list[Any] = []  # the handler replaced while recording (empty: none replaced)


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM while recording: unwind as Ctrl-C does, so the recording is kept beside the
    cassette (masked) instead of lost, and never saved over it."""
    raise KeyboardInterrupt(f"ssemock: signal {signum} (SIGTERM) while recording")


def _trap_sigterm(on: bool) -> None:
    """While any player records (main thread only, and only where SIGTERM still has its default
    action): SIGTERM raises KeyboardInterrupt; the default comes back when the last one stops."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        return
    if on and not _SIGTERM_BEFORE and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        _SIGTERM_BEFORE.append(signal.signal(signal.SIGTERM, _on_sigterm))
    elif not on and _SIGTERM_BEFORE and not _RECORDING:
        before = _SIGTERM_BEFORE.pop()
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # not replaced since by someone else
            signal.signal(signal.SIGTERM, before)


def recording_players() -> list[Any]:
    """The players recording right now (started, not stopped): what an interruption that ends
    the process at once keeps a partial of (`Player.keep_partial`)."""
    return list(_RECORDING)


def recording(player: Any, on: bool) -> None:
    """``player`` starts (or stops) recording: an interruption then keeps its partial."""
    if on:
        _RECORDING.add(player)
    else:
        _RECORDING.discard(player)
    _trap_sigterm(on)


def stat(path: Path | None) -> tuple[int, int] | None:
    try:
        found = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size) if found is not None else None


#: what each stack calls a read timeout when recording: replayed as the replaying stack's ReadTimeout


def save(
    path: Path | None,
    interactions: list[Interaction],
    new: list[Interaction],
    *,
    disk: tuple[int, int] | None,
    record_mode: RecordMode,
    match_on: matching.MatchOn,
    existed: bool,
    kept: list[_keep.Kept],
) -> tuple[list[Interaction], tuple[int, int] | None]:
    """`save_cassette` with no child processes recorded: the interactions saved and the file's
    new ``stat``."""
    out, disk = save_cassette(
        path,
        interactions,
        new,
        disk=disk,
        record_mode=record_mode,
        match_on=match_on,
        existed=existed,
        kept=kept,
    )
    return out.interactions, disk


def save_cassette(
    path: Path | None,
    interactions: list[Interaction],
    new: list[Interaction],
    *,
    disk: tuple[int, int] | None,
    record_mode: RecordMode,
    match_on: matching.MatchOn,
    existed: bool,
    kept: list[_keep.Kept],
    stdio: tuple[list[StdioSession], list[StdioSession]] = ([], []),
) -> tuple[Cassette, tuple[int, int] | None]:
    """Merge ``new`` into the cassette (``interactions``, as loaded when the file was ``disk``)
    and write it: the cassette saved and the file's new ``stat``. A file someone else saved
    meanwhile is started from instead; with ``all``/``rewrite`` a new interaction replaces the
    recorded one it matches. ``stdio`` is (the child processes the cassette held, those recorded
    now), merged alike (a new one replaces those of its ``stdio=`` entry under ``all``/``rewrite``).
    Refused (SecretError) when a secret is left: then the recording is kept beside the cassette,
    masked, and appended to ``kept``."""
    if path is None:
        return _write(
            None,
            interactions,
            new,
            record_mode=record_mode,
            match_on=match_on,
            existed=existed,
            kept=kept,
            stdio=stdio,
        ), None
    with lock_for(path):
        if stat(path) != disk:  # someone else saved it meanwhile: start from theirs
            theirs = Cassette.load(path)
            interactions, stdio = theirs.interactions, (theirs.stdio, stdio[1])
        out = _write(
            path,
            interactions,
            new,
            record_mode=record_mode,
            match_on=match_on,
            existed=existed,
            kept=kept,
            stdio=stdio,
        )
        return out, stat(path)


def _write(
    path: Path | None,
    interactions: list[Interaction],
    new: list[Interaction],
    *,
    record_mode: RecordMode,
    match_on: matching.MatchOn,
    existed: bool,
    kept: list[_keep.Kept],
    stdio: tuple[list[StdioSession], list[StdioSession]],
) -> Cassette:
    old_stdio, new_stdio = stdio
    if record_mode in ("all", "rewrite"):
        interactions = [
            x for x in interactions if all(matching.differences(n.request, x.request, match_on) for n in new)
        ]
        old_stdio = [s for s in old_stdio if all(s.match != n.match for n in new_stdio)]
    out = Cassette([*interactions, *new], path=path, stdio=[*old_stdio, *new_stdio])
    findings = scan_cassette(out)  # the one scan every write of cassette data goes through
    if findings:  # refused: the recording is kept beside the cassette, masked (_refused says how)
        raise SecretError(
            findings,
            path=path,
            message=_refused(
                path,
                out.interactions,
                [str(f) for f in findings],
                existed=existed,
                kept=kept,
                stdio=out.stdio,
            ),
        )
    if path is not None:
        out.save(path, scan_secrets=False)  # scanned just above
    return out


def _refused(
    path: Path | None,
    interactions: list[Interaction],
    leaks: list[str],
    *,
    existed: bool,
    kept: list[_keep.Kept],
    stdio: Sequence[StdioSession] = (),
) -> str:
    """Keep a recording the scan refused (its child processes too) beside the cassette, masked
    (no second paid call to record it again), and say what was masked and how to accept it."""
    message = (
        "refusing to save: a secret is left in the cassette: "
        + "; ".join(leaks)
        + " (redact it with before_record_request/before_record_response)"
    )
    if path is None:
        return message
    try:
        found = _keep.keep_masked(interactions, _keep.beside(path, _keep.REFUSED), stdio)
    except (OSError, CassetteError) as exc:
        return f"{message}; the recording could not be kept beside it either: {mask_text(str(exc))}"
    kept.append(found)
    if found.path is None:
        return (
            f"{message}; it is not kept: masking left a secret in it\n{found.describe()}\n"
            "add before_record_request/before_record_response hooks that remove it and record again"
        )
    return (
        f"{message}\nthe recording is kept with every secret masked in {found.path}"
        f"{' (' + str(path) + ' is unchanged)' if existed else ''}:\n{found.describe()}\n"
        f"to use it: check what was masked, then run `ssemock accept {found.path}` (it becomes "
        f"{path}); or add before_record_request/before_record_response hooks that redact "
        "these fields and record again"
    )


def keep_partial(
    path: Path | None,
    recorded: Sequence[Interaction],
    *,
    kept: list[_keep.Kept],
    stdio: Sequence[StdioSession] = (),
) -> Path | None:
    """What was recorded so far (``stdio``: the child processes), written beside the cassette as
    ``<name>.partial.json``, scanned and masked like a refused save; the cassette itself is never
    touched (None: nothing to keep, or no file)."""
    if path is None or not (recorded or stdio):
        return None
    found = _keep.keep_masked(list(recorded), _keep.beside(path, _keep.PARTIAL), stdio)
    kept.append(found)
    return found.path

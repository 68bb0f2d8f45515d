"""What a player says about what it did: the unmatched-request message (what was sent, the
closest recorded requests as a diff, each way to fix it), what was served for a failure report,
and what teardown checks find (interactions never played, streams not read to the end)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..plan import diagnose as _diagnose
from ..plan import matching
from ..plan.serving import Play
from ..redaction.rules import escape_control, mask_text
from ..stacks.lock import Guard
from ..store.cassette import Cassette, Request

if TYPE_CHECKING:
    from .state import PlayerState as Player

__all__ = ["explain", "missing", "passes", "served_summary", "unconsumed", "unplayed"]


def passes(guard: Guard, cassette: Cassette, host: str, sent: Request) -> bool:
    """Whether a request (or handshake) to ``host`` that no interaction matches is sent for
    real: ``host`` is allowed and the cassette never recorded the host and port of ``sent`` (issue
    43: a recorded endpoint that gets something else is a mismatch to report, even on loopback)."""
    return guard.allows(host) and not matching.records_origin(
        (x.request for x in cassette.interactions), sent.url
    )


def explain(player: Player, sent: Request) -> str:
    """The UnmatchedRequestError message: what was sent, the closest recorded requests with
    what differs as a diff, and each way to fix it."""
    names = [matching.name_of(m) for m in player.match_on]
    interactions = player.cassette.interactions
    count = len(interactions)
    lines = [
        f"ssemock: no recorded interaction matches {sent.method} {sent.url}",
        f"  cassette: {player.where} ({count} interaction{'' if count == 1 else 's'}, "
        f"record_mode={player.record_mode!r}, matching on {', '.join(names)})",
    ]
    host = urlsplit(sent.url).hostname
    if count and all(urlsplit(x.request.url).hostname != host for x in interactions):
        lines.append(f"  the request goes to {host}, a host the cassette never saw")
    elif player.guard.allows(host or "") and matching.records_origin(
        (x.request for x in interactions), sent.url
    ):
        lines.append(
            f"  {host} is an allowed host, but the cassette recorded this host and port: what it "
            "does not match fails here rather than going out for real"
        )
    ranked = player.selection.closest(sent)
    fixes = [
        "record it: pytest --ssemock-record-mode=new_episodes (or once for a new cassette), "
        'or use_cassette(..., record_mode="new_episodes")'
    ]
    if ranked:
        lines.append("  closest recorded requests:")
    for diffs, i in ranked:
        x = interactions[i]
        lines.append(f"    #{i} {x.request.method} {x.request.url}")
        if not diffs:
            lines.append(f"       matches, but was already played {player.play_counts[i]} time(s)")
            fixes.append(f"serve #{i} again: allow_playback_repeats=True")
            continue
        lines.extend(f"       {line}" for diff in diffs for line in _as_diff(diff))
        failing = {d.split(":", 1)[0] for d in diffs}
        kept = [n for n in names if n not in failing]
        where_to = failing & {"scheme", "host", "port", "path", "uri", "url"}  # another endpoint:
        if len(player.match_on) == len(names) and kept and not where_to and i == ranked[0][1]:  # never drop
            fixes.append(f"match #{i} by matching less: match_on={kept!r}")
    lines.append("  to fix it:")
    lines.extend(f"    - {fix}" for fix in fixes)
    # what was sent may hold a key: never print it; a cassette's text never drives the terminal
    return escape_control(mask_text("\n".join(lines)))


def missing(player: Player, sent: Request) -> str:
    """The UnmatchedRequestError message of a replay-only player whose cassette file does not
    exist: the path it resolved to and how to record it (no request can match, loopback included)."""
    lines = [
        f"ssemock: {sent.method} {sent.url}: the cassette {player.where} does not exist, and "
        f"record_mode={player.record_mode!r} only replays",
        '  to record it: pytest --ssemock-record-mode=once (or the marker\'s record_mode="once"), '
        'or use_cassette(..., record_mode="once")',
        "  if it exists elsewhere: a name in the marker resolves in the test's cassette folder "
        "(ssemock_cassette_dir); a relative path resolves from there too",
    ]
    return escape_control(mask_text("\n".join(lines)))


_DIFF = re.compile(r"^(?P<what>\w+)(?:: (?P<where>\$[^:]*))?: (?P<rec>.*) recorded, (?P<sent>.*) sent$")


def _as_diff(difference: str) -> list[str]:
    """One matcher's difference as diff lines: ``- recorded`` / ``+ sent``."""
    found = _DIFF.match(difference)
    if found is None:
        return [difference]
    what = found["what"] + (f" {found['where']}" if found["where"] else "")
    return [f"- {what}: {found['rec']}  (recorded)", f"+ {what}: {found['sent']}  (sent)"]


def served_summary(player: Player, last: int = 3) -> str:
    """What was served to the client, for a failure report (the last two responses)."""
    with player.lock:
        plays = player.plays[-2:]
    return "\n".join(line for play in plays for line in _diagnose.play_summary(play, last))


def unplayed(player: Player) -> list[int]:
    """Indexes of interactions never served (one a fault answered for was served)."""
    with player.lock:
        served = {p.index for p in player.plays}
    return [i for i, n in enumerate(player.play_counts) if n == 0 and i not in served]


def unconsumed(player: Player) -> list[Play]:
    """Plays whose stream the client opened but stopped reading before the end (and before any
    fault); a response closed without reading its body (an error status) is not one."""
    return [p for p in player.plays if p.stream is not None and p.stream.opened and not p.stream.finished]

"""The ways in: [`replay`][ssemock.replay] an in-memory cassette, [`use_cassette`][ssemock.use_cassette] a
cassette file; each makes one typed [`Options`][ssemock.Options] value and starts a
[`Player`][ssemock.Player] with it (the pytest plugin opens its players the same way)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..core.modes import RecordMode
from ..plan import matching
from ..plan.errors import UnmatchedRequestError
from ..plan.record import MAX_BODY_BYTES, RequestHook, ResponseHook
from ..plan.serving import (
    ChunkingSpec,
    FaultSpec,
    Plan,
    Play,
    ReplayStream,
    TimingSpec,
    TransformSpec,
    plan_response,
)
from ..store import kept
from ..store.cassette import Cassette
from . import session
from .core import Player, recording_refusals
from .options import Options

__all__ = [
    "Options",
    "Play",
    "Plan",
    "Player",
    "ReplayStream",
    "UnmatchedRequestError",
    "open_cassette",
    "plan_response",
    "recording_players",
    "recording_refusals",
    "replay",
    "use_cassette",
]

recording_players = session.recording_players


def replay(
    cassette: Cassette,
    *,
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    allow_playback_repeats: bool = False,
    protocol: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    ignore_hosts: Sequence[str] | None = None,
    ignore_localhost: bool = False,
    block_subprocesses: bool = False,
    ignore_message_paths: str | Sequence[str] | None = None,
    stdio: Sequence[str] | None = None,
) -> Player:
    """A player over an in-memory cassette: ``with ssemock.replay(c) as player: ...``.

    Replay only: a request no interaction matches raises
    [`UnmatchedRequestError`][ssemock.UnmatchedRequestError], unless its host is in
    ``allowed_hosts`` (loopback by default; ``[]`` for none): then it is sent for real. A
    connection no intercepted stack makes, to a host that is not allowed, raises
    [`NetworkBlockedError`][ssemock.NetworkBlockedError]. Requests to ``ignore_hosts`` (``ignore_localhost=True``: loopback) are
    always sent for real, never served. ``block_subprocesses=True`` points the proxy variables
    of child processes started meanwhile at a port that refuses every connection.
    ``ignore_message_paths`` lists JSON paths of a WebSocket client's messages that matching
    skips (``["$.session.instructions"]``), added to the protocol's defaults (Realtime: the event
    ids, and base64 audio compared by its length); ``["strict"]`` drops the defaults.
    ``stdio`` lists child processes (MCP stdio servers) recorded and replayed through their
    pipes, by program name or script path: a matching child is not started in replay (see
    [stdio servers](../guide/stdio.md)).

    Use it for a cassette built in code or loaded yourself; for a cassette file, use
    [`use_cassette`][ssemock.use_cassette] (or, under pytest, the ``ssemock`` marker):

        import httpx
        import ssemock

        cassette = ssemock.Cassette()
        cassette.add("POST", "https://api.example.com/v1/stream", [b"data: hel", b"lo\\n\\n"],
                     headers={"content-type": "text/event-stream"})
        with ssemock.replay(cassette, chunking="bytewise") as player:
            with httpx.stream("POST", "https://api.example.com/v1/stream") as response:
                chunks = list(response.iter_raw())
        assert len(chunks) == 13 and b"".join(chunks) == b"data: hello\\n\\n"
        assert len(player.plays) == 1
    """
    options = Options(
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        allow_playback_repeats=allow_playback_repeats,
        protocol=protocol,
        allowed_hosts=allowed_hosts,
        ignore_hosts=ignore_hosts,
        ignore_localhost=ignore_localhost,
        block_subprocesses=block_subprocesses,
        ignore_message_paths=ignore_message_paths,
        stdio=stdio,
    )
    return Player(cassette, options)


def use_cassette(
    path: str | os.PathLike[str],
    *,
    record_mode: RecordMode = "none",
    chunking: ChunkingSpec = "as_recorded",
    transform: TransformSpec = None,
    timing: TimingSpec = "instant",
    faults: FaultSpec = (),
    match_on: matching.MatchOn | None = None,
    allow_playback_repeats: bool = False,
    protocol: str | None = None,
    before_record_request: RequestHook | None = None,
    before_record_response: ResponseHook | None = None,
    allowed_hosts: Sequence[str] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    drain_on_close: bool | float = True,
    ignore_hosts: Sequence[str] | None = None,
    ignore_localhost: bool = False,
    block_subprocesses: bool = False,
    ignore_message_paths: str | Sequence[str] | None = None,
    stdio: Sequence[str] | None = None,
) -> Player:
    """Replay (and record, by ``record_mode``) the cassette file at ``path``.

    Modes as vcrpy's: ``none`` replays only; ``once`` records if the file is missing, else
    replays; ``new_episodes`` replays what matches and records the rest; ``all`` records
    everything (replacing the interactions it re-records); ``rewrite`` starts from empty.
    ``allowed_hosts`` (default: loopback only) says which hosts a replay may still reach: an
    unmatched request to one is sent for real, a connection that no intercepted stack makes to
    any other is refused (a recording records every request, and warns of such connections).
    Requests to ``ignore_hosts`` (``ignore_localhost=True``: loopback) are never recorded nor
    served, in every mode. ``block_subprocesses``, ``ignore_message_paths`` and ``stdio``: see
    [`replay`][ssemock.player.replay.replay].
    ``max_body_bytes`` bounds one recorded body (64 MiB): past it the interaction is cut and
    marked truncated, with a warning. ``drain_on_close`` (on by default, up to 30 s; a number of
    seconds, or False) keeps reading a recorded stream the client closed before its end, so the
    cassette holds all of it.

    Under pytest the ``ssemock`` marker does the same and names the file after the test; outside
    it (a script, another test runner):

        with ssemock.use_cassette("cassettes/chat.json", record_mode="once") as player:
            reply = my_app.ask("Say hello.")  # recorded on the first run, replayed after
        print(player.plays)
    """
    options = Options(
        record_mode=record_mode,
        chunking=chunking,
        transform=transform,
        timing=timing,
        faults=faults,
        match_on=match_on,
        allow_playback_repeats=allow_playback_repeats,
        protocol=protocol,
        before_record_request=before_record_request,
        before_record_response=before_record_response,
        allowed_hosts=allowed_hosts,
        max_body_bytes=max_body_bytes,
        drain_on_close=drain_on_close,
        ignore_hosts=ignore_hosts,
        ignore_localhost=ignore_localhost,
        block_subprocesses=block_subprocesses,
        ignore_message_paths=ignore_message_paths,
        stdio=stdio,
    )
    return open_cassette(path, options)


def open_cassette(path: str | os.PathLike[str], options: Options) -> Player:
    """A player over the cassette file at ``path`` with ``options``: what
    [`use_cassette`][ssemock.use_cassette] and the pytest plugin both start (the file is loaded
    when it exists and the record mode keeps it)."""
    p = Path(path)
    existed = p.exists() and options.record_mode != "rewrite"
    if not existed:
        cassette = Cassette(path=p)
    elif options.record_mode == "none":  # replay only: parsed once a session (store.kept)
        cassette = kept.load(p)
    else:
        cassette = Cassette.load(p)
    return Player(cassette, options, path=p, existed=existed)

"""What a player does, as one typed value: the options the marker, the ini keys, ``use_cassette``
and ``replay`` give, carried as they are to the player, its recordings and the stacks (instead of
many keywords passed along)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from ..core.modes import RECORD_MODES, RecordMode
from ..core.names import unknown
from ..plan.matching import MatchOn
from ..plan.message_matching import resolve as resolve_message_paths
from ..plan.record import MAX_BODY_BYTES, RequestHook, ResponseHook
from ..plan.serving import ChunkingSpec, FaultSpec, TimingSpec, TransformSpec
from ..plan.stdio import check_entries as check_stdio

__all__ = ["Options"]


@dataclass(frozen=True)
class Options:
    """A player's options; every field is a keyword of [`use_cassette`][ssemock.use_cassette] (and
    of the marker), with the same default. Checked when made: a bad record mode or body bound is a
    ``ValueError`` naming it, before anything is intercepted."""

    record_mode: RecordMode = "none"
    """``none`` replays only; ``once`` records a missing cassette; ``new_episodes`` records what
    matches nothing; ``all`` re-records; ``rewrite`` starts from empty (as vcrpy's modes)."""
    chunking: ChunkingSpec = "as_recorded"
    """How replayed bytes are cut into reads: a chunking name (``bytewise``, ``random:SEED``...) or
    a `Chunking`; the marker also takes a list, or ``"all"``, and parametrizes over it."""
    transform: TransformSpec = None
    """Edits to the replayed stream (or a list of them, or ``"all"``) that a correct client must
    survive: CRLF line ends, comments, retry fields..."""
    timing: TimingSpec = "instant"
    """When replayed chunks arrive: ``instant``, ``recorded`` (the recorded gaps) or ``scaled:F``."""
    faults: FaultSpec = ()
    """Failures to inject into replayed streams (a fault name, a `Fault`, or several), aimed with
    ``on=`` at the interactions they apply to."""
    match_on: MatchOn | None = None
    """Which parts of a request pick its recorded interaction: matcher names or callables
    (default: method, URL parts and body)."""
    allow_playback_repeats: bool = False
    """Whether one recorded interaction may answer several requests."""
    protocol: str | None = None
    """The stream's protocol for decoding and accumulation (``openai.chat``...); None detects it
    from each interaction."""
    before_record_request: RequestHook | None = None
    """Gets each request before it is matched or recorded: returns it (edited: it is matched and
    saved so) or None to send it for real, neither matched nor recorded."""
    before_record_response: ResponseHook | None = None
    """Gets each response before it is saved: returns it (edited) or None to leave it out."""
    allowed_hosts: Sequence[str] | None = None
    """Hosts a replay may still reach (default: loopback only); any other connection is refused."""
    max_body_bytes: int = MAX_BODY_BYTES
    """The most one recorded body keeps (64 MiB); past it the interaction is cut, marked
    truncated, with a warning."""
    drain_on_close: bool | float = True
    """Keep reading a recorded stream the client closed early, so the cassette holds all of it:
    True (up to 30 s), a number of seconds, or False."""
    ignore_hosts: Sequence[str] | None = None
    """Hosts whose requests are never recorded nor served, in every mode."""
    ignore_localhost: bool = False
    """Add loopback to ``ignore_hosts``."""
    block_subprocesses: bool = False
    """Point the proxy variables of child processes started meanwhile at a port that refuses every
    connection (a child process is out of the in-process lock's reach)."""
    ignore_message_paths: str | Sequence[str] | None = None
    """JSON paths of the client's WebSocket messages (and ``stdio`` children's stdin lines) that
    matching skips (``$.session.instructions``), added to the defaults of the session's protocol
    (Realtime: ``$.event_id`` ignored, base64 audio compared by its length); ``"strict"`` first drops the defaults: every field, audio and
    binary message compared exactly, but the paths listed after it."""

    stdio: Sequence[str] | None = None
    """Child processes recorded and replayed through their pipes (MCP stdio servers): entries
    matched against each child's command line (``"server.py"`` matches ``python /x/server.py``);
    a matching child is recorded line by line and, in replay, not started."""

    def __post_init__(self) -> None:
        if self.record_mode not in RECORD_MODES:
            raise unknown("record_mode", self.record_mode, RECORD_MODES)
        if not (isinstance(self.max_body_bytes, int) and self.max_body_bytes > 0):
            raise ValueError(
                f"max_body_bytes must be a positive number of bytes, got {self.max_body_bytes!r}"
            )
        check_stdio(self.stdio)
        try:
            resolve_message_paths(self.ignore_message_paths)
        except ValueError as exc:
            raise ValueError(f"ignore_message_paths: {exc}") from None

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in order."""
        return [f.name for f in fields(cls)]

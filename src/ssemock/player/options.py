"""What a player does, as one typed value: the options the marker, the ini keys, ``use_cassette``
and ``replay`` give, carried as they are to the player, its recordings and the stacks (instead of
many keywords passed along)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from ..core.modes import RECORD_MODES, RecordMode
from ..core.names import unknown
from ..plan.matching import MatchOn
from ..plan.record import MAX_BODY_BYTES, RequestHook, ResponseHook
from ..plan.serving import ChunkingSpec, FaultSpec, TimingSpec, TransformSpec

__all__ = ["Options"]


@dataclass(frozen=True)
class Options:
    """A player's options; every field is a keyword of [`use_cassette`][ssemock.use_cassette] (and
    of the marker), with the same default. Checked when made: a bad record mode or body bound is a
    ``ValueError`` naming it, before anything is intercepted."""

    record_mode: RecordMode = "none"
    chunking: ChunkingSpec = "as_recorded"
    transform: TransformSpec = None
    timing: TimingSpec = "instant"
    faults: FaultSpec = ()
    match_on: MatchOn | None = None
    allow_playback_repeats: bool = False
    protocol: str | None = None
    before_record_request: RequestHook | None = None
    before_record_response: ResponseHook | None = None
    allowed_hosts: Sequence[str] | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    drain_on_close: bool | float = True
    ignore_hosts: Sequence[str] | None = None
    ignore_localhost: bool = False
    block_subprocesses: bool = False

    def __post_init__(self) -> None:
        if self.record_mode not in RECORD_MODES:
            raise unknown("record_mode", self.record_mode, RECORD_MODES)
        if not (isinstance(self.max_body_bytes, int) and self.max_body_bytes > 0):
            raise ValueError(
                f"max_body_bytes must be a positive number of bytes, got {self.max_body_bytes!r}"
            )

    @classmethod
    def names(cls) -> list[str]:
        """The option names, in order."""
        return [f.name for f in fields(cls)]

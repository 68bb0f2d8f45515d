"""What a player's collaborators (its recording run, assertions and reports) read and change of
it: the player as they see it, so none of them imports the Player itself."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from ..core.modes import RecordMode
from ..plan.record import Recorder
from ..plan.selection import Selection
from ..plan.serving import Play
from ..redaction.keep import Kept
from ..store.cassette import Cassette
from ..variants.chunking import Chunking
from ..variants.faults import Aim, Fault
from ..variants.timing import Timing
from ..variants.transforms import Transform
from .options import Options

__all__ = ["PlayerState"]


class PlayerState(Protocol):
    """The [`Player`][ssemock.Player]'s state its collaborators share (under ``lock``)."""

    options: Options
    cassette: Cassette
    path: Path | None
    existed: bool
    record_mode: RecordMode
    chunking: Chunking
    transforms: list[Transform]
    timing: Timing
    faults: list[Fault]
    match_on: tuple[Any, ...]
    protocol: str | None
    plays: list[Play]
    conversations: list[Any]  # the WebSocket sessions replayed (`ssemock.plan.conversation.Conversation`)
    latest: Play | Recorder | None
    attempts: int
    kept: list[Kept]
    lock: threading.Lock

    @property
    def where(self) -> str: ...

    @property
    def selection(self) -> Selection: ...

    @property
    def play_counts(self) -> list[int]: ...

    @property
    def recorders(self) -> list[Recorder]: ...

    def aimed(self) -> Aim: ...

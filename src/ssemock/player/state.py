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
from ..plan.websocket.record import WsRecorder
from ..redaction.keep import Kept
from ..stacks.lock import Guard
from ..store.cassette import Cassette
from ..store.stdio import StdioSession
from ..variants.chunking import Chunking
from ..variants.faults import Aim, Fault
from ..variants.timing import Timing
from ..variants.transforms import Transform
from .options import Options

__all__ = ["PlayerState", "StdioRecorded", "opened_count"]


class StdioRecorded(Protocol):
    """The child processes a run recorded (`ssemock.player.stdio.StdioRun`)."""

    recorded: list[StdioSession]


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
    sessions: list[WsRecorder]  # the WebSocket sessions recorded
    session_opened_after: dict[WsRecorder, tuple[int, int, int]]  # `opened_count` when each opened
    latest: Play | Recorder | None
    attempts: int
    kept: list[Kept]
    guard: Guard
    lock: threading.Lock

    @property
    def stdio(self) -> StdioRecorded: ...

    @property
    def where(self) -> str: ...

    @property
    def selection(self) -> Selection: ...

    @property
    def play_counts(self) -> list[int]: ...

    @property
    def recorders(self) -> list[Recorder]: ...

    def aimed(self) -> Aim: ...


def opened_count(player: PlayerState) -> tuple[int, int, int]:
    """How many responses the player replayed and recorded, and WebSocket sessions it replayed,
    so far (under its ``lock``): a recorded session is the latest while this has not grown."""
    return (len(player.plays), len(player.recorders), len(player.conversations))

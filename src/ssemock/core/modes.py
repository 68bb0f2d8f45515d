"""Record modes, as vcrpy's (a module of its own so the pytest plugin can name them without
loading the player)."""

from __future__ import annotations

from typing import Literal

__all__ = ["RECORD_MODES", "RecordMode"]

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite"]
RECORD_MODES: tuple[str, ...] = ("none", "once", "new_episodes", "all", "rewrite")

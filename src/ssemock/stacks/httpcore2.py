"""The httpx2 stack (the OpenAI >= 3 and Anthropic >= 1 SDKs): ``httpcore2`` pools, patched as
`httpcore` patches httpcore's; faults raise ``httpcore2`` exceptions, which httpx2 maps to
``httpx2.RemoteProtocolError`` / ``httpx2.ReadTimeout``."""

from __future__ import annotations

import importlib
from types import ModuleType

from . import Patch
from .httpcore import pool_patches

__all__ = ["ERRORS", "patches"]

ERRORS: ModuleType = importlib.import_module("httpcore2")


def patches() -> list[Patch]:
    return pool_patches("httpcore2", "httpx2")

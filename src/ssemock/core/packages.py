"""Packages whose submodules are always the ones ``sys.modules`` holds.

pytester's in-process runs (how plugin authors test, and how a suite may run pytest inside
pytest) drop the modules a run imported; the next run imports them again. A package that
stayed keeps its old submodule as an attribute, and ``from ..pkg import mod`` would bind that
dropped copy, whose classes the rest no longer knows. A package made `fresh` reads each
submodule attribute from ``sys.modules`` (importing it again when it was dropped)."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__all__ = ["FreshPackage", "fresh"]


class FreshPackage(types.ModuleType):
    """A package whose submodule attributes are the modules ``sys.modules`` holds now."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if isinstance(value, types.ModuleType):
            full = f"{super().__getattribute__('__name__')}.{name}"
            if getattr(value, "__name__", None) == full:
                current = sys.modules.get(full)
                if current is not value:
                    return current if current is not None else importlib.import_module(full)
        return value


def fresh(name: str) -> None:
    """Make the package called ``name`` (its ``__init__`` calls ``fresh(__name__)``) read its
    submodules from ``sys.modules``."""
    sys.modules[name].__class__ = FreshPackage

"""Response bodies scanned while they were recorded (`ssemock.scan.incremental`): the scan at
save (`ssemock.scan.walk.scan_interaction`) takes their findings instead of scanning them again,
as long as the response lives and still holds the body that was scanned."""

from __future__ import annotations

import weakref
from typing import Any, Protocol

__all__ = ["BodyScanned", "prescanned", "scanned_as_recorded"]


class BodyScanned(Protocol):
    """A response body scanned as it arrived (`ssemock.scan.incremental.BodyScan`)."""

    def findings(self, response: Any) -> list[Any] | None:
        """What the scan at save finds in ``response``'s body (as interaction 0), or None when this
        scan cannot tell (a header the scan reads is not what it was scanned with)."""


_SCANNED: dict[int, tuple[weakref.ref[Any], BodyScanned, bytes]] = {}


def scanned_as_recorded(response: Any, scanned: BodyScanned, body: bytes) -> None:
    """Let the scan at save take ``response``'s body findings from ``scanned`` while the response
    lives and its body is ``body`` (the very object scanned)."""
    key = id(response)
    _SCANNED[key] = (weakref.ref(response, lambda _: _SCANNED.pop(key, None)), scanned, body)


def prescanned(response: Any) -> list[Any] | None:
    """The findings in ``response``'s body scanned as it was recorded, or None (not scanned so,
    or its body or headers changed since)."""
    done = _SCANNED.get(id(response))
    if done is None:
        return None
    ref, scanned, body = done
    if ref() is not response or body is not getattr(response, "body", None):
        return None
    return scanned.findings(response)

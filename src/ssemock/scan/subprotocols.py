"""Credentials a WebSocket client carries in a subprotocol (``Sec-WebSocket-Protocol``), where a
browser cannot set a header: OpenAI Realtime's ``openai-insecure-api-key.<key>``, Kubernetes'
``base64url.bearer.authorization.k8s.io.<token>``, and any ``<name>.<value>`` whose dot-separated
name says credential (``x-api-key.<key>``, ``token.<value>``). Everything after that name is the
credential, whatever it looks like (a key may hold dots), as a header named ``authorization`` is."""

from __future__ import annotations

import re

from .fields import credential_name

__all__ = ["credential_start", "subprotocols"]

_KNOWN = ("openai-insecure-api-key.", "base64url.bearer.authorization.k8s.io.")
_SEGMENT = re.compile(r"[^.]+\.")


def credential_start(subprotocol: str) -> int | None:
    """Where the credential of ``subprotocol`` starts (after its credential name and dot), or
    None when its name says none."""
    for prefix in _KNOWN:
        if subprotocol.lower().startswith(prefix) and len(subprotocol) > len(prefix):
            return len(prefix)
    for m in _SEGMENT.finditer(subprotocol):
        if m.end() < len(subprotocol) and credential_name(m.group()[:-1]):
            return m.end()
    return None


def subprotocols(header: str) -> list[tuple[int, int]]:
    """The (start, end) of each subprotocol in a ``Sec-WebSocket-Protocol`` value (comma
    separated, spaces around each left out)."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^,\s]+(?:[^,]*[^,\s])?", header)]

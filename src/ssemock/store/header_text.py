"""What a header name or value may not hold: a CR, an LF or a NUL, which would end the header
line where it is written (`serve`'s answer, a WebSocket handshake) and start another. The
loader, `Cassette.add`, ``import-har`` and a WebSocket session's subprotocols and extensions
refuse such text with this one check."""

from __future__ import annotations

import re

__all__ = ["header_text_problem"]

_BREAKS = re.compile(r"[\r\n\x00]")
_NAMES = {"\r": "a CR", "\n": "an LF", "\x00": "a NUL"}


def header_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a header name or value (``"holds a CR at 4"``), or None when it can."""
    found = _BREAKS.search(text)
    return None if found is None else f"holds {_NAMES[found.group()]} at {found.start()}"

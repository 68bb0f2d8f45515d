"""What a header name or value may not hold: a CR, an LF or a NUL, which would end the header
line where it is written (`serve`'s answer, a WebSocket handshake) and start another, or a lone
surrogate, which no encoding writes (the save would fail on it). The loader, `Cassette.add`, ``import-har`` and a WebSocket session's subprotocols and extensions
refuse such text with this one check."""

from __future__ import annotations

import re

__all__ = ["header_text_problem"]

_BREAKS = re.compile("[\r\n\x00\ud800-\udfff]")
_NAMES = {"\r": "a CR", "\n": "an LF", "\x00": "a NUL"}


def header_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be a header name or value (``"holds a CR at 4"``), or None when it can."""
    found = _BREAKS.search(text)
    if found is None:
        return None
    char = found.group()
    return f"holds {_NAMES.get(char) or f'a lone surrogate (U+{ord(char):04X})'} at {found.start()}"

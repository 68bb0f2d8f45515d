"""The logic behind ``ssemock show/validate/rechunk/redact/fix``: look at cassettes and repair them.

Everything here works on [`Cassette`][ssemock.Cassette] objects and returns plain data
(dataclasses with ``to_dict()``) or text; the command line only parses arguments and prints.

* `summarize` / `format_summary` -- what ``show`` prints: chunk timing, gap and size
  statistics, a size histogram, a terminal timeline, the decoded events and what they accumulate to.
* `validate_file` -- what ``validate`` checks: the file loads, the body decodes, spec
  oddities (BOM, CR-only line endings, an unterminated last event, events after ``[DONE]``, an
  unknown protocol), secrets left behind, incomplete recordings.
* `rechunk` -- a new boundary map (and body, with transforms) from any strategy.
* `redact` -- the default redaction rules plus secrets scrubbed out of bodies, with the
  boundary map shifted to match.
* `repair` -- load a cassette whose boundary map disagrees with a hand-edited body.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from ..core.packages import FreshPackage

if TYPE_CHECKING:
    from ..redaction.scrub import redact, remap_ends
    from .decoding import Decoded, decode_response, stream_kind
    from .fix import Repair, repair, repair_file
    from .rechunk import Rechunked, rechunk, rechunk_response
    from .show import format_events, format_summary, size_histogram, summarize, timeline
    from .validate import (
        FileReport,
        Finding,
        cassette_files,
        format_validation,
        validate_cassette,
        validate_file,
    )

#: public name -> the module that defines it, imported when the name is first read: the command
#: line imports only the command it runs (``ssemock --help`` imported show, validate, rechunk and
#: fix, twice the CPU of the cassette code alone; issue 48 item 4)
_WHERE = {
    **dict.fromkeys(("redact", "remap_ends"), "ssemock.redaction.scrub"),
    **dict.fromkeys(("Decoded", "decode_response", "stream_kind"), f"{__name__}.decoding"),
    **dict.fromkeys(("Repair", "repair", "repair_file"), f"{__name__}.fix"),
    **dict.fromkeys(("Rechunked", "rechunk", "rechunk_response"), f"{__name__}.rechunk"),
    **dict.fromkeys(
        ("format_events", "format_summary", "size_histogram", "summarize", "timeline"), f"{__name__}.show"
    ),
    **dict.fromkeys(
        (
            "FileReport",
            "Finding",
            "cassette_files",
            "format_validation",
            "validate_cassette",
            "validate_file",
        ),
        f"{__name__}.validate",
    ),
}


class _Commands(FreshPackage):
    """The package module: a public name is read from its module as ``sys.modules`` holds it now
    (imported on first use, never kept here: pytester's in-process reruns drop the modules a run
    imported), and ``ssemock.commands.rechunk`` stays the function once its submodule is imported
    (the import system sets the package attribute to the submodule)."""

    def __getattribute__(self, name: str) -> Any:
        where = _WHERE.get(name)
        if where is None:
            return super().__getattribute__(name)
        return getattr(importlib.import_module(where), name)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Decoded",
    "FileReport",
    "Finding",
    "Rechunked",
    "Repair",
    "decode_response",
    "format_events",
    "format_summary",
    "format_validation",
    "rechunk",
    "rechunk_response",
    "redact",
    "remap_ends",
    "repair",
    "repair_file",
    "size_histogram",
    "stream_kind",
    "summarize",
    "timeline",
    "validate_cassette",
    "validate_file",
    "cassette_files",
]

sys.modules[__name__].__class__ = _Commands  # submodules read from sys.modules, names resolved on use

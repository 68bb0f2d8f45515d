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

from ..core.packages import fresh
from ..redaction.scrub import redact, remap_ends
from .decoding import Decoded, decode_response, stream_kind
from .fix import Repair, repair, repair_file
from .rechunk import Rechunked, rechunk, rechunk_response
from .show import format_events, format_summary, size_histogram, summarize, timeline
from .validate import FileReport, Finding, cassette_files, format_validation, validate_cassette, validate_file

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

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)

"""Keeping secrets out: the default redaction rules, secrets scrubbed out of bodies with their
boundary maps shifted, secrets masked in decoded forms, and refused or interrupted recordings kept
masked.

Its names here are the public ones a suite's hooks and messages use (``from ssemock.redaction
import mask_text``): the rules (`redact_request`, `redact_response`, `redact_url`), the maskers
for your own messages (`mask_text`, `mask_url`, `safe_message`, `escape_control`), and the scans
(`scan`, `scan_cassette`, `find_secrets`)."""

from ..core.packages import fresh
from ..scan.shapes import safe_message, scan
from ..scan.walk import Finding, scan_cassette
from .rules import (
    REDACTED,
    escape_control,
    find_secrets,
    mask_text,
    mask_url,
    redact_request,
    redact_response,
    redact_url,
)

__all__ = [
    "REDACTED",
    "Finding",
    "escape_control",
    "find_secrets",
    "mask_text",
    "mask_url",
    "redact_request",
    "redact_response",
    "redact_url",
    "safe_message",
    "scan",
    "scan_cassette",
]

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)

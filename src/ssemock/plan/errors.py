"""The errors a replay raises instead of touching the network.

Both are BaseExceptions on purpose: SDKs catch ``Exception`` around sending (Anthropic wraps it in
APIConnectionError and retries with back-off; botocore retries connection errors), which would
hide the real cause behind retries and a generic message.
"""

from __future__ import annotations

__all__ = ["NetworkBlockedError", "RecordingVariantError", "SsemockWarning", "UnmatchedRequestError"]


def _safe(args: tuple[object, ...]) -> list[object]:
    from ..scan.shapes import (
        safe_message,  # here: the plugin imports this module before any test needs orjson
    )

    return [safe_message(a) if isinstance(a, str) else a for a in args]


class UnmatchedRequestError(BaseException):
    """A request matched no recorded interaction and recording is off.

    Its message quotes what was sent: every secret and credential-named value in it is masked
    and control characters are escaped (`ssemock.scan.shapes.safe_message`)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*_safe(args))


class NetworkBlockedError(BaseException):
    """During a replay, code opened a connection that no intercepted client stack made, to a host
    that ``allowed_hosts`` does not allow. Its message is masked like `UnmatchedRequestError`'s."""

    def __init__(self, *args: object) -> None:
        super().__init__(*_safe(args))


class RecordingVariantError(BaseException):
    """A recording run cannot give the client what the replay run will: a chunking, transform or
    fault that needs the whole stream (``coalesced``, ``truncate``, ...) on a server-push stream,
    which the recording run serves as it arrives and which may never end. Its message names the
    cassette, the request, the variant and what to do (aim the fault elsewhere, or record without
    it, then replay with it); masked like `UnmatchedRequestError`'s."""

    def __init__(self, *args: object) -> None:
        super().__init__(*_safe(args))


class SsemockWarning(UserWarning):
    """Something worth a look that does not fail the test: an interaction never played, a stream
    not read to the end, a connection a recording cannot tee."""

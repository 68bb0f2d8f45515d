"""Faults that answer with the provider's own error, in its shape from the response's protocol
module: an HTTP error before any stream (`http_error`), an error event in the stream
(`error_event`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .. import framing, protocols
from .fault_model import Fault, Served, Target, _count, _newline, _seconds

__all__ = ["error_body", "error_event", "http_error"]


def _protocol(url: str, headers: Sequence[tuple[str, str]], body: bytes) -> protocols.Protocol:
    """The served response's protocol (URL, content type, events); OpenAI Chat when none says."""
    return protocols.for_response(url, headers, body) or protocols.get("openai.chat")


def error_body(url: str, status: int, message: str | None = None) -> bytes:
    """The JSON error body the provider of ``url`` sends with ``status``."""
    found = protocols.detect(url=url) or protocols.get("openai.chat")
    return found.http_error(status, message).body


class _HttpError(Fault):
    per_request = True

    def __init__(
        self, status: int, retry_after: float | None, body: bytes | str | None, headers: dict[str, str] | None
    ) -> None:
        if type(status) is not int or not 400 <= status <= 599:
            raise ValueError(f"http_error: status must be a 4xx/5xx status code, got {status!r}")
        retry_after = _seconds("http_error", "retry_after", retry_after, optional=True)
        if body is not None and not isinstance(body, (bytes, str)):
            raise ValueError(f"http_error: body must be text or bytes, got {type(body).__name__} {body!r}")
        if headers is not None and not (
            isinstance(headers, Mapping)
            and all(
                isinstance(k, str) and isinstance(v, str) and not {"\r", "\n"} & set(k + v)
                for k, v in headers.items()
            )
        ):
            raise ValueError(f"http_error: headers must map names to one-line string values, got {headers!r}")
        self.status, self.retry_after, self.headers = status, retry_after, dict(headers or {})
        self.body = body.encode() if isinstance(body, str) else body
        self.name = f"http_error:status={status}" + (
            f",retry_after={retry_after:g}" if retry_after is not None else ""
        )

    def apply(self, served: Served, attempt: int) -> None:
        content_type = "application/json"
        body = self.body
        if body is None:
            shape = _protocol(served.url, served.headers, served.body).http_error(self.status, None)
            body, content_type = shape.body, shape.content_type
        headers = [("content-type", content_type)]
        if self.retry_after is not None:
            headers.append(("retry-after", f"{self.retry_after:g}"))
        headers += [(k.lower(), v) for k, v in self.headers.items()]
        served.status, served.headers, served.body = self.status, headers, body
        served.ends, served.times, served.error, served.stalls = [len(body)], [0.0], None, {}
        served.consumes, served.more = False, False

    def needs_end(self, attempt: int = 0) -> str | None:
        return None  # it replaces the response before any stream


def http_error(
    status: int,
    retry_after: float | None = None,
    body: bytes | str | None = None,
    headers: dict[str, str] | None = None,
    on: Target | str | int | None = None,
) -> Fault:
    """Answer with an HTTP error before any stream, in the provider's error body shape (and
    content type), from the response's protocol module; ``body`` replaces it. Unaimed, it
    answers the first interaction matched (and every retry of it)."""
    return _HttpError(status, retry_after, body, headers).aimed(on)


_EVENT_MESSAGES = {
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
    "rate_limit_error": "Rate limited",
    "server_error": "The server had an error while processing your request. Sorry about that!",
}


class _ErrorEvent(Fault):
    def __init__(self, kind: str, after_event: int | None) -> None:
        if not isinstance(kind, str) or not kind.strip() or any(c in kind for c in ",;|:\r\n"):
            raise ValueError(
                f"error_event: kind must be an error type name such as 'overloaded_error', got {kind!r}"
            )
        self.kind = kind
        self.after_event = _count("error_event", "after_event", after_event, optional=True)
        self.name = f"error_event:kind={kind}" + (
            f",after_event={after_event}" if after_event is not None else ""
        )

    def refuses(self, framing: str) -> str | None:
        if _speaker(framing) is None:
            return f"no protocol writes an error event in a {framing} body" + (
                " (a plain JSON body is no stream: use http_error)" if framing == "json" else ""
            )
        return None

    def takes_document(self, url: str, headers: Sequence[tuple[str, str]], body: bytes) -> bool:
        found = protocols.for_response(url, headers, body)
        return found is not None and protocols.speaks(found, "json")

    def needs_end(self, attempt: int = 0) -> str | None:
        if self.after_event is None:
            return "without after_event= it goes mid-stream, at half the events, and only the end says how many there are"
        return None

    def apply(self, served: Served, attempt: int) -> None:
        kind = served.framing
        if self.refuses(kind) or not served.reached(events=self.after_event):
            return
        ends = served.event_ends()
        n = self.after_event if self.after_event is not None else len(ends) // 2
        if not framing.get(kind).stream:  # a document: the error is the whole answer
            n = 0
        offset = 0 if n <= 0 else ends[n - 1] if n <= len(ends) else len(served.body)
        message = _EVENT_MESSAGES.get(self.kind, self.kind.replace("_", " "))
        protocol = _protocol(served.url, served.headers, served.body)
        if not protocols.speaks(protocol, kind):  # e.g. an unknown JSON-lines API: the framing's usual shape
            protocol = _speaker(kind) or protocol
        owes = protocol.owed(served.body, offset, served.more) if protocol.owed else None
        if served.more and protocol.owed is not None and owes is None:
            # the request it fails is the next one answered, still to come: serve up to the cut, wait
            served.cut(offset)
            served.cut_at, served.more = None, True
            return
        error = protocols.StreamError(
            self.kind,
            message,
            framing=kind,
            newline=_newline(served.body),
            after_first=offset > 0,
            request_id=owes,
            before=served.body[:offset],
        )
        event = protocol.error_event(error)
        served.cut(offset)
        served.cut_at = None  # the stream goes on with the error event: not cut
        served.body += event
        served.ends.append(len(served.body))
        served.times.append(served.times[-1] if served.times else 0.0)


def _speaker(framing: str) -> protocols.Protocol | None:
    """The first registered protocol that writes its events in ``framing``."""
    return next((p for p in protocols.all_protocols() if protocols.speaks(p, framing)), None)


def error_event(
    kind: str = "overloaded_error", after_event: int | None = None, on: Target | str | int | None = None
) -> Fault:
    """The stream's own error event after event N (default: mid-stream); the stream ends there.

    Written by the response's protocol module in the body's framing and line endings: an SSE
    ``error`` event (OpenAI, Anthropic), ``error`` + ``response.failed`` (Responses), an NDJSON
    ``{"error": ...}`` line (Ollama), a Gemini error object (an array element and the ``]`` in
    a JSON array stream), an eventstream exception frame (Bedrock), Cohere's ``message-end`` with
    ``finish_reason: ERROR``. A body in a framing the detected protocol does not write gets the
    shape of the first protocol that writes it (an unknown JSON-lines API: Ollama's line). A
    plain JSON body is replaced by the error where a protocol answers with one (MCP's JSON-RPC
    error answer); unaimed, only such a body takes it."""
    return _ErrorEvent(kind, after_event).aimed(on)

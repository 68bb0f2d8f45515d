"""Run vcrpy-style hooks and matchers under ssemock, unchanged.

vcrpy calls ``before_record_request`` and custom matchers with its own ``vcr.request.Request``
(``.uri``, ``.headers`` a case-insensitive dict, ``.body``) and ``before_record_response`` with a
dict (``{"status": {"code": ...}, "headers": {name: [values]}, "body": {"string": ...}}``).
ssemock calls them with [`ssemock.Request`][ssemock.Request] and [`ssemock.Response`][ssemock.Response]. These wrappers
translate both ways, so a migrated suite keeps its hooks as they are (``ssemock migrate`` wraps
them); port a hook to ssemock's types when convenient and drop the wrapper. They need vcrpy
installed (they build vcrpy's own Request).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store.cassette import Headers, Request, Response, body_ends

__all__ = ["matcher", "request_hook", "response_hook"]

VcrHook = Callable[[Any], Any]
"""A vcrpy ``before_record_request`` or ``before_record_response`` hook."""


def _vcr_request(request: Request) -> Any:
    try:
        from vcr.request import Request as VcrRequest
    except ImportError as exc:  # pragma: no cover - the suites these wrap come from vcrpy
        raise ImportError(
            "ssemock.player.vcr_hooks runs vcrpy-style hooks with vcrpy's Request: pip install vcrpy, "
            "or port the hook to ssemock.Request"
        ) from exc
    headers: dict[str, str] = {}
    for name, value in request.headers:
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return VcrRequest(request.method, request.url, request.body, headers)


def _headers(items: Any) -> Headers:
    out: Headers = []
    for name, values in dict(items or {}).items():
        for value in values if isinstance(values, (list, tuple)) else [values]:
            out.append(
                (str(name).lower(), value.decode("latin-1") if isinstance(value, bytes) else str(value))
            )
    return out


def _bytes(value: Any) -> bytes | None:
    if isinstance(value, dict):
        value = value.get("string")
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def request_hook(hook: VcrHook) -> Callable[[Request], Request | None]:
    """A vcrpy ``before_record_request`` hook as an ssemock one (None still drops the request)."""

    def run(request: Request) -> Request | None:
        out = hook(_vcr_request(request))
        if out is None:
            return None
        return Request(out.method, out.uri, _headers(out.headers), _bytes(out.body))

    run.__name__ = getattr(hook, "__name__", "request_hook")
    return run


def response_hook(hook: VcrHook) -> Callable[[Response], Response | None]:
    """A vcrpy ``before_record_response`` hook as an ssemock one. A body the hook changes gets
    one chunk per event (the recorded boundaries no longer fit it)."""

    def run(response: Response) -> Response | None:
        headers: dict[str, list[str]] = {}
        for name, value in response.headers:
            headers.setdefault(name, []).append(value)
        data = {
            "status": {"code": response.status, "message": ""},
            "headers": headers,
            "body": {"string": response.body},
        }
        out = hook(data)
        if out is None:
            return None
        status = out.get("status", {})
        code = int(status.get("code", response.status) if isinstance(status, dict) else status)
        new_headers = _headers(out.get("headers"))
        body = _bytes(out.get("body")) or b""
        if body == response.body:
            ends, times = list(response.ends), list(response.times)
        else:
            kind = next((v for k, v in new_headers if k == "content-type"), None)
            ends = body_ends(body, kind)
            last = response.times[-1] if response.times else 0.0
            times = [response.times[i] if i < len(response.times) else last for i in range(len(ends))]
        return Response(code, new_headers, body, ends, times, response.complete, response.error)

    run.__name__ = getattr(hook, "__name__", "response_hook")
    return run


def matcher(function: Callable[[Any, Any], Any]) -> Callable[[Request, Request], bool | None]:
    """A vcrpy custom matcher (``matcher(r1, r2)`` raising AssertionError or returning False when
    the requests differ) as an ssemock one."""

    def run(sent: Request, recorded: Request) -> bool | None:
        verdict = function(_vcr_request(sent), _vcr_request(recorded))
        return None if verdict is None else bool(verdict)

    run.__name__ = getattr(function, "__name__", "matcher")
    return run

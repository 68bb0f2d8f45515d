"""respx mockers for httpcore (httpx) and httpcore2 (httpx2), with a pass-through that records.

respx patches httpcore's connection classes; the official OpenAI and Anthropic SDKs use httpx2,
whose ``httpcore2`` classes respx does not know. One mocker per stack, both routed to the same
``respx`` router, intercept every client of either stack, sync and async. A request the router
answers with :class:`Record` goes to the real network and its response stream is teed.
"""

from __future__ import annotations

import contextvars
from abc import ABC
import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType
from typing import Any

import httpx
from respx.mocks import HTTPCoreMocker
from respx.models import PassThrough

__all__ = ["STACKS", "Record", "mockers", "stack_of"]

STACK_KEY = "ssemock.stack"
_passing = contextvars.ContextVar("ssemock_passing", default=False)


class Record(PassThrough):
    """Raised by a router to send a request to the real network and tee its response."""

    def __init__(self, request: httpx.Request, tee: Callable[[Any, bool], Any]) -> None:
        super().__init__("recording", request=request, origin=None)  # type: ignore[arg-type]
        self.tee = tee


class _TeeingMocker(HTTPCoreMocker, ABC):
    """An httpcore-style mocker whose pass-through can tee the real response for recording."""

    stack: str = "httpx"
    core: str = "httpcore"

    @classmethod
    def to_httpx_request(cls, **kwargs: Any) -> httpx.Request:
        request: httpx.Request = super().to_httpx_request(**kwargs)  # type: ignore[no-untyped-call]
        request.extensions[STACK_KEY] = cls.stack
        return request

    @classmethod
    def _send_sync_request(cls, httpx_request: httpx.Request, *, target_spec: Any, instance: Any,
                           **kwargs: Any) -> Any:
        if _passing.get():  # the real pool calls its connections: let them through untouched
            return target_spec(instance, **kwargs)
        try:
            httpx_response = cls.handler(httpx_request)  # type: ignore[no-untyped-call]
        except PassThrough as passing:
            token = _passing.set(True)
            try:
                response = target_spec(instance, **kwargs)
            finally:
                _passing.reset(token)
            return passing.tee(response, False) if isinstance(passing, Record) else response
        return cls.from_sync_httpx_response(httpx_response, instance, **kwargs)

    @classmethod
    async def _send_async_request(cls, httpx_request: httpx.Request, *, target_spec: Any,
                                  instance: Any, **kwargs: Any) -> Any:
        if _passing.get():
            return await target_spec(instance, **kwargs)
        try:
            httpx_response = await cls.async_handler(httpx_request)  # type: ignore[no-untyped-call]
        except PassThrough as passing:
            token = _passing.set(True)
            try:
                response = await target_spec(instance, **kwargs)
            finally:
                _passing.reset(token)
            return passing.tee(response, True) if isinstance(passing, Record) else response
        return cls.from_sync_httpx_response(httpx_response, instance, **kwargs)

    @classmethod
    def from_sync_httpx_response(cls, httpx_response: httpx.Response, target: Any, **kwargs: Any) -> Any:
        core = importlib.import_module(cls.core)
        return core.Response(status=httpx_response.status_code, headers=httpx_response.headers.raw,
                             content=httpx_response.stream, extensions=httpx_response.extensions)


def _targets(core: str) -> list[str]:
    return [f"{core}._{side}.{name}" for side, prefix in (("sync", ""), ("async", "Async"))
            for name in (f"connection.{prefix}HTTPConnection", f"connection_pool.{prefix}ConnectionPool",
                         f"http_proxy.{prefix}HTTPProxy")]


class HttpcoreMocker(_TeeingMocker):
    name = "ssemock-httpcore"
    targets = _targets("httpcore")


class Httpcore2Mocker(_TeeingMocker):
    name = "ssemock-httpcore2"
    stack = "httpx2"
    core = "httpcore2"
    targets = _targets("httpcore2")


STACKS: dict[str, type[_TeeingMocker]] = {"httpx": HttpcoreMocker, "httpx2": Httpcore2Mocker}


def mockers() -> list[type[_TeeingMocker]]:
    """The mockers for the stacks installed here (httpx always; httpx2 when present)."""
    return [m for m in STACKS.values() if importlib.util.find_spec(m.core) is not None]


def stack_of(request: httpx.Request) -> str:
    """``"httpx"`` or ``"httpx2"``: which client stack sent the request."""
    return str(request.extensions.get(STACK_KEY, "httpx"))


def core_module(request: httpx.Request) -> ModuleType:
    """The httpcore module of the request's stack; its exceptions are mapped by the transport."""
    return importlib.import_module(STACKS[stack_of(request)].core)

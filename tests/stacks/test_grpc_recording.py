"""What a recording keeps of the calls user code makes, and what a replay matches (issue 46 items
1, 2): the recording hooks apply to gRPC calls as to HTTP (``before_record_request`` edits or
drops a call's request and metadata, ``before_record_response`` its initial metadata or the whole
call); a client interceptor that adds metadata or edits the request is recorded as the call went
out and matched so in replay, sync and aio; channels made before the player started keep their
target and scheme; a request stream's mismatch names the protobuf field."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_servicer import SERVICE, method, serving

import ssemock
from ssemock.store.model import Request, Response


@pytest.fixture(scope="module")
def target() -> Iterator[str]:
    """The generic servicer on loopback, for the recording runs."""
    with serving() as where:
        yield where


def test_before_record_request_edits_a_call_s_metadata_and_none_sends_it_unrecorded(
    target: str, tmp_path: Path
) -> None:
    def hook(request: Request) -> Request | None:
        if request.url.endswith("/Count"):
            return None
        return Request(request.method, request.url, [(k, v) for k, v in request.headers if k != "x-user"])

    path = tmp_path / "calls.json"
    with ssemock.use_cassette(path, record_mode="all", before_record_request=hook):
        with grpc.insecure_channel(target) as channel:
            assert (
                method(channel, "Say")(b"bob", metadata=[("x-user", "u1"), ("x-keep", "k")]) == b"hello bob"
            )
            assert list(method(channel, "Count")(b"2")) == [b"n:0", b"n:1"]
    (say,) = ssemock.Cassette.load(path).interactions
    assert say.grpc is not None and say.grpc.method == f"/{SERVICE}/Say"
    assert ("x-keep", "k") in say.request.headers and "x-user" not in dict(say.request.headers)


def test_before_record_response_edits_a_call_s_initial_metadata_and_none_leaves_it_out(
    target: str, tmp_path: Path
) -> None:
    seen: list[list[tuple[str, str]]] = []

    def hook(response: Response) -> Response | None:
        seen.append(list(response.headers))
        if response.header("x-served-by") is None:  # Sum sends no initial metadata: left out
            return None
        return Response(response.status, [(k, "edited") for k, _ in response.headers])

    path = tmp_path / "calls.json"
    with ssemock.use_cassette(path, record_mode="all", before_record_response=hook):
        with grpc.insecure_channel(target) as channel:
            assert method(channel, "Say")(b"bob") == b"hello bob"
            assert method(channel, "Sum")(iter([b"a", b"b"])) == b"a+b"
    assert seen and all(isinstance(h, list) for h in seen)
    (say,) = ssemock.Cassette.load(path).interactions
    assert say.grpc is not None and say.grpc.method == f"/{SERVICE}/Say"
    assert say.response.header("x-served-by") == "edited"
    assert [m.data for m in say.grpc.received()] == [b"hello bob"]  # the call itself is whole
    with ssemock.use_cassette(path, record_mode="none"), grpc.insecure_channel(target) as channel:
        _, call = method(channel, "Say").with_call(b"bob")
        assert ("x-served-by", "edited") in call.initial_metadata()


class _Edit(grpc.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """A sync interceptor as SDKs write them: adds metadata and edits the request."""

    def intercept_unary_unary(self, continuation: Any, details: Any, request: bytes) -> Any:
        metadata = [*(details.metadata or ()), ("x-added", "by-interceptor")]
        return continuation(details._replace(metadata=metadata), request + b"!")


class _AioEdit(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    """The same, for grpc.aio."""

    async def intercept_unary_unary(self, continuation: Any, details: Any, request: bytes) -> Any:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), ("x-added", "by-interceptor"))
        return await continuation(details._replace(metadata=metadata), request + b"!")


def test_a_sync_interceptor_s_edits_are_recorded_as_sent_and_matched_so(target: str, tmp_path: Path) -> None:
    path = tmp_path / "calls.json"
    with ssemock.use_cassette(path, record_mode="all"):
        with grpc.intercept_channel(grpc.insecure_channel(target), _Edit()) as channel:
            assert method(channel, "Say")(b"bob") == b"hello bob!"
    (say,) = ssemock.Cassette.load(path).interactions
    assert say.grpc is not None and [m.data for m in say.grpc.sent()] == [b"bob!"]
    assert ("x-added", "by-interceptor") in say.request.headers
    with ssemock.use_cassette(path, record_mode="none"):
        with grpc.intercept_channel(grpc.insecure_channel(target), _Edit()) as channel:
            assert method(channel, "Say")(b"bob") == b"hello bob!"


def test_an_aio_interceptor_s_edits_are_recorded_as_sent_and_matched_so(target: str, tmp_path: Path) -> None:
    path = tmp_path / "calls.json"

    async def say() -> bytes:
        async with grpc.aio.insecure_channel(target, interceptors=[_AioEdit()]) as channel:
            return await method(channel, "Say")(b"bob")  # type: ignore[no-any-return]

    with ssemock.use_cassette(path, record_mode="all"):
        assert asyncio.run(say()) == b"hello bob!"
    (recorded,) = ssemock.Cassette.load(path).interactions
    assert recorded.grpc is not None and [m.data for m in recorded.grpc.sent()] == [b"bob!"]
    assert ("x-added", "by-interceptor") in recorded.request.headers
    with ssemock.use_cassette(path, record_mode="none"):
        assert asyncio.run(say()) == b"hello bob!"


def test_an_aio_channel_made_before_the_player_started_keeps_its_target(target: str, tmp_path: Path) -> None:
    """A channel (an SDK client's) made before ``use_cassette`` is recorded under its own target
    (it was ``unknown``: the target was noted only by channels made while a player was active)
    and its call replays from it."""
    path = tmp_path / "calls.json"

    async def run(record_mode: str) -> bytes:
        async with grpc.aio.insecure_channel(target) as channel:
            say = method(channel, "Say")
            with ssemock.use_cassette(path, record_mode=record_mode):
                return await say(b"bob")  # type: ignore[no-any-return]

    assert asyncio.run(run("all")) == b"hello bob"
    (recorded,) = ssemock.Cassette.load(path).interactions
    assert recorded.request.url == f"http://{target}/{SERVICE}/Say"
    assert asyncio.run(run("none")) == b"hello bob"

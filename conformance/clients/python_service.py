"""Test services speaking LaunchDarkly's SSE contract-test protocol for seven Python SSE clients,
each reading the stream as its documentation shows and reporting what it delivers:
``python conformance/clients/python_service.py NAME --port PORT`` (`ssemock conformance` starts
them from conformance/clients.toml)."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib.metadata
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import requests

from ssemock.commands.conformance.service import Client, Comment, Event, Opened, loopback, serving


def _openai(opened: Opened) -> Iterator[Event]:
    """openai-python's SSEDecoder fed the response's bytes, as its Stream does."""
    from openai._streaming import SSEDecoder

    with loopback().stream("GET", opened.url, headers=opened.headers) as answer:
        for ev in SSEDecoder().iter_bytes(answer.iter_bytes()):
            yield Event(ev.event or "message", ev.data, ev.id or "")


def _anthropic(opened: Opened) -> Iterator[Event]:
    """anthropic-sdk-python's SSEDecoder fed the response's bytes, as its Stream does."""
    from anthropic._streaming import SSEDecoder

    with loopback().stream("GET", opened.url, headers=opened.headers) as answer:
        for ev in SSEDecoder().iter_bytes(answer.iter_bytes()):
            yield Event(ev.event or "message", ev.data, ev.id or "")


def _httpx_sse(opened: Opened) -> Iterator[Event]:
    """httpx-sse's connect_sse and iter_sse."""
    import httpx_sse

    with httpx_sse.connect_sse(loopback(), "GET", opened.url, headers=opened.headers) as source:
        for ev in source.iter_sse():
            yield Event(ev.event, ev.data, ev.id)


def _sseclient(opened: Opened) -> Iterator[Event]:
    """sseclient-py's SSEClient over a streamed requests response, as its README shows."""
    import sseclient

    with requests.get(opened.url, stream=True, headers=opened.headers, timeout=30) as answer:
        for ev in sseclient.SSEClient(answer).events():
            yield Event(ev.event, ev.data, ev.id or "")


def _requests_sse(opened: Opened) -> Iterator[Event]:
    """requests-sse's EventSource (it reconnects on its own)."""
    from requests_sse import EventSource

    delay = datetime.timedelta(milliseconds=max(opened.initial_delay_ms, 1))
    with EventSource(
        opened.url,
        reconnection_time=delay,
        max_connect_retry=2,
        timeout=30,
        headers=dict(opened.headers),
        latest_event_id=opened.last_event_id,
    ) as source:
        opened.closers.append(source.close)
        for ev in source:
            yield Event(ev.type or "message", ev.data or "", ev.last_event_id)


def _aiohttp_sse_client(opened: Opened) -> Iterator[Event]:
    """aiohttp-sse-client's EventSource (it reconnects on its own), stepped on an event loop of
    this thread: each event is reported before the client reads on (or reconnects)."""
    import aiohttp
    from aiohttp_sse_client import client

    async def events() -> AsyncIterator[Event]:
        delay = datetime.timedelta(milliseconds=max(opened.initial_delay_ms, 1))
        async with aiohttp.ClientSession() as session:
            source = client.EventSource(
                opened.url,
                session=session,
                reconnection_time=delay,
                max_connect_retry=2,
                headers=opened.headers,
            )
            async with source:
                async for ev in source:
                    yield Event(ev.type or "message", ev.data, ev.last_event_id)

    loop = asyncio.new_event_loop()
    stream = events()
    try:
        while True:
            try:
                item = loop.run_until_complete(anext(stream))
            except StopAsyncIteration:
                return
            yield item
    finally:
        loop.run_until_complete(stream.aclose())
        loop.close()


def _launchdarkly(opened: Opened) -> Iterator[Event | Comment]:
    """LaunchDarkly's SSEClient (ld_eventsource), reconnecting after every fault."""
    from ld_eventsource import SSEClient
    from ld_eventsource.actions import Comment as LdComment
    from ld_eventsource.actions import Event as LdEvent
    from ld_eventsource.config import ConnectStrategy, ErrorStrategy

    source = SSEClient(
        connect=ConnectStrategy.http(opened.url, headers=opened.headers),
        initial_retry_delay=opened.initial_delay_ms / 1000,
        error_strategy=ErrorStrategy.always_continue(),
        last_event_id=opened.last_event_id,
    )
    opened.closers.append(source.close)
    for item in source.all:
        if isinstance(item, LdEvent):
            yield Event(item.event, item.data, item.last_event_id or "")
        elif isinstance(item, LdComment):
            yield Comment(item.comment)


# name: (the client, its distribution, its capabilities)
CLIENTS: dict[str, tuple[Callable[[Opened], Iterator[Event | Comment]], str, tuple[str, ...]]] = {
    "openai-python": (_openai, "openai", ()),
    "anthropic-sdk-python": (_anthropic, "anthropic", ()),
    "httpx-sse": (_httpx_sse, "httpx-sse", ()),
    "sseclient-py": (_sseclient, "sseclient-py", ()),
    "requests-sse": (_requests_sse, "requests-sse", ("reconnect",)),
    "aiohttp-sse-client": (_aiohttp_sse_client, "aiohttp-sse-client", ("reconnect",)),
    "launchdarkly-eventsource": (_launchdarkly, "launchdarkly-eventsource", ("reconnect", "comments")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("client", choices=sorted(CLIENTS))
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    read, dist, capabilities = CLIENTS[args.client]
    client: Client = read
    with serving(
        client,
        name=args.client,
        version=importlib.metadata.version(dist),
        capabilities=capabilities,
        port=args.port,
    ):
        threading.Event().wait()


if __name__ == "__main__":
    main()

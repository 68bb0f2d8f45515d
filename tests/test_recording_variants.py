"""One test passes both ways: on a recording run the client gets what the replay run will give it
(the fault, chunking and transform applied to the live stream's recording), while the cassette
gets the whole live stream as it arrived. Through every stack of the registry, in every record
mode, against a real loopback server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import httpx2
import pytest
import requests

import ssemock
from ssemock.stacks import STACKS

View = tuple[list[bytes], str | None]  # the chunks the client read, and the exception that ended it


def _httpx_like(lib: Any) -> Callable[[str], View]:
    def read(url: str) -> View:
        chunks: list[bytes] = []
        try:
            with lib.Client() as client, client.stream("POST", url, content=b"{}") as response:
                for chunk in response.iter_raw():
                    chunks.append(chunk)
        except lib.HTTPError as exc:
            return chunks, type(exc).__name__
        return chunks, None

    return read


def _async_httpx2(url: str) -> View:
    async def run() -> View:
        chunks: list[bytes] = []
        try:
            async with httpx2.AsyncClient() as client, client.stream("POST", url, content=b"{}") as response:
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
        except httpx2.HTTPError as exc:
            return chunks, type(exc).__name__
        return chunks, None

    return asyncio.run(run())


def _aiohttp(url: str) -> View:
    async def run() -> View:
        chunks: list[bytes] = []
        try:
            async with aiohttp.ClientSession() as session, session.post(url, data=b"{}") as response:
                async for chunk in response.content.iter_any():
                    chunks.append(chunk)
        except aiohttp.ClientError as exc:
            return chunks, type(exc).__name__
        return chunks, None

    return asyncio.run(run())


def _requests(url: str) -> View:
    chunks: list[bytes] = []
    try:
        with requests.post(url, data=b"{}", stream=True, timeout=10) as response:
            for chunk in response.iter_content(chunk_size=None):
                chunks.append(chunk)
    except requests.RequestException as exc:
        return chunks, type(exc).__name__
    return chunks, None


#: one reader per stack of the registry (httpx sync, httpx2 async: both cores of the httpcore stacks)
READERS: dict[str, Callable[[str], View]] = {
    "httpx": _httpx_like(httpx),
    "httpx2": _async_httpx2,
    "aiohttp": _aiohttp,
    "urllib3": _requests,
}
VARIANTS = {
    "fault": {"faults": "disconnect:after_event=3"},
    "chunking": {"chunking": "bytewise"},
    "transform": {"transform": "crlf"},
}
MODES = ["once", "new_episodes", "all", "rewrite"]


def test_every_stack_of_the_registry_has_a_reader() -> None:
    assert set(READERS) == set(STACKS)


def _prepare(path: Path, mode: str, url: str) -> None:
    """The cassette before the recording run: none for ``once``; for ``new_episodes`` one that
    does not match; for ``all`` / ``rewrite`` an old recording of the same request."""
    if mode == "once":
        return
    old = ssemock.Cassette()
    if mode == "new_episodes":
        old.add("POST", url + "?other", [b"data: other\n\n"], headers={"content-type": "text/event-stream"})
    else:
        old.add("POST", url, [b"data: old\n\n"], headers={"content-type": "text/event-stream"})
    old.save(path)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("stack", STACKS)
def test_the_recording_run_gives_the_client_the_replay_runs_view(
    tmp_path: Path, server: str, scripts: Any, stack: str, variant: str, mode: str
) -> None:
    url, path, options = f"{server}/ten", tmp_path / "c.json", VARIANTS[variant]
    writes = scripts["/ten"].writes
    _prepare(path, mode, url)
    with ssemock.use_cassette(path, record_mode=mode, **options) as recording:  # type: ignore[arg-type]
        recorded = READERS[stack](url)
        recorded_events = recording.expected.events
    (x,) = [x for x in ssemock.Cassette.load(path).interactions if x.request.url == url]
    assert x.response.body == b"".join(writes) and x.response.complete  # the whole live stream
    assert len(x.response.chunks) > 1  # as it arrived, not as the client was served
    with ssemock.use_cassette(path, record_mode="none", **options) as replaying:  # type: ignore[arg-type]
        replayed = READERS[stack](url)
        replayed_events = replaying.expected.events
    assert recorded == replayed  # the same chunks, ended by the same exception
    assert recorded_events == replayed_events
    chunks, error = recorded
    if variant == "fault":
        assert b"".join(chunks) == b"".join(writes[:3]) and error is not None
    elif variant == "chunking":
        assert b"".join(chunks) == b"".join(writes) and {len(c) for c in chunks} == {1} and error is None
    else:
        assert b"".join(chunks) == b"".join(writes).replace(b"\n", b"\r\n") and error is None


FAULTS = [*ssemock.faults._EXAMPLES.values(), "sequence:http_error:status=503|as_recorded"]


@pytest.mark.parametrize("fault", FAULTS)
def test_every_fault_of_the_registry_is_served_alike_on_recording_and_replay(
    tmp_path: Path, server: str, fault: str
) -> None:
    assert set(ssemock.faults._EXAMPLES) == set(ssemock.faults._FACTORIES)  # one example per fault
    url, path = f"{server}/ten", tmp_path / "c.json"
    why = getattr(ssemock.faults.get(fault), "replay_only", None)
    if why:  # served from what the cassette holds (resume: the stream after the event): refused, named
        with pytest.raises(
            ValueError, match=f"a recording run cannot serve these faults.*{re.escape(fault)}"
        ):
            ssemock.use_cassette(path, record_mode="once", faults=fault)  # type: ignore[arg-type]
        return
    views = []
    for mode in ("once", "none"):
        with ssemock.use_cassette(path, record_mode=mode, faults=fault):  # type: ignore[arg-type]
            views.append(READERS["httpx"](url))
    assert views[0] == views[1]


class _NeedsTheCassette(ssemock.faults.Fault):
    """A fault that can only be served from a cassette recorded before (as one aimed at an index)."""

    name = "needs_the_cassette"
    replay_only = "it is aimed at a recorded interaction by its index"

    def apply(self, served: Any, attempt: int) -> None:
        pass


def test_a_fault_a_recording_run_cannot_serve_is_refused_naming_it(tmp_path: Path) -> None:
    from ssemock.player.replay import recording_refusals

    built_in = [ssemock.faults.get(f) for f in FAULTS]
    assert (
        recording_refusals([f for f in built_in if not getattr(f, "replay_only", None)]) == []
    )  # every other built-in one can
    assert [r.partition(":")[0] for r in recording_refusals(built_in)] == [
        f.name.partition(":")[0] for f in built_in if getattr(f, "replay_only", None)
    ]
    with pytest.raises(ValueError, match="needs_the_cassette: it is aimed at a recorded interaction"):
        ssemock.use_cassette(tmp_path / "c.json", record_mode="once", faults=[_NeedsTheCassette()])
    ssemock.use_cassette(tmp_path / "c.json", faults=[_NeedsTheCassette()])  # replay only: fine
    ssemock.Cassette().save(tmp_path / "c.json")
    ssemock.use_cassette(
        tmp_path / "c.json", record_mode="once", faults=[_NeedsTheCassette()]
    )  # it exists: replays

"""A server-push stream on a recording run (ssemock.plan.push_recording): the client gets what the replay run
will give it (chunking, transform and fault applied) as the live stream arrives, never after its
end, while the cassette gets the whole live stream as it arrived; a variant that needs the end
is refused naming it. Against a loopback server whose GET event stream sends its first event,
waits for the client to acknowledge it, sends the rest and stays open (the legacy MCP transport's
shape), through every stack of the registry and every streamable variant of the registries."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpcore
import httpx
import httpx2
import pytest
import requests
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock import chunking, faults, framing, transforms
from ssemock.commands.loopback import running
from ssemock.plan.push_recording import needs_end, prefix
from ssemock.plan.serving import plan_response
from ssemock.stacks import STACKS
from ssemock.store.cassette import Response
from ssemock.variants.fault_aim import _AtAttempt

SSE = "text/event-stream"
#: What the streams send, write by write: the first event alone, then (once the client has
#: acknowledged it) writes that cut events apart and join them, as a network does.
MCP = [
    b"event: endpoint\ndata: /messages/?session_id=REDACTED\n\n",
    b'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\nevent: message\ndata: {"jsonrpc"',
    b':"2.0","method":"notifications/progress","params":{"progress":"h\xc3\xa9"}}\n\n',
    b'event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"text":"done"}}\n\n',
]
PLAIN = [
    b'event: endpoint\ndata: {"hello": 1}\n\n',
    b'data: {"n": 1}\n\ndata: {"n"',
    b': 2, "text": "\xe4\xb8\x96"}\n\n: a comment\n\n',
    b'data: {"n": 3, "text": "done"}\n\n',
]
WRITES = {"/mcp-sse": MCP, "/plain": PLAIN, "/ending": MCP}
ACKS: dict[str, threading.Event] = {}  # per stream token: the client has read the first event


async def _push(request: Request) -> StreamingResponse:
    """A GET event stream: its first write, then the rest once the client acknowledged the first
    event (``data: late`` and the end if no acknowledgement comes within 10 s: a recorder that holds
    the stream back until its end makes it say late), then open until the client goes away
    (``/ending``: then it ends)."""
    writes = WRITES[request.url.path]
    ack = ACKS.setdefault(request.query_params["t"], threading.Event())

    async def body() -> AsyncIterator[bytes]:
        yield writes[0]
        for _ in range(2000):  # polled, not a blocking wait: the task is cancelled when the client goes
            if ack.is_set():
                break
            await asyncio.sleep(0.005)
        else:
            yield b"data: late\n\n"
            return
        for data in writes[1:]:
            await asyncio.sleep(0.01)
            yield data
        while request.url.path != "/ending":
            await asyncio.sleep(0.05)

    return StreamingResponse(body(), media_type=SSE)


async def _ack(request: Request) -> PlainTextResponse:
    """What an MCP client does with the ``endpoint`` event: POST to it (here: acknowledge it)."""
    ACKS.setdefault(request.query_params["t"], threading.Event()).set()
    return PlainTextResponse("Accepted", status_code=202)


APP = Starlette(
    routes=[Route(path, _push, methods=["GET"]) for path in WRITES] + [Route("/ack", _ack, methods=["POST"])]
)


@pytest.fixture(scope="module")
def push_server() -> Iterator[str]:
    with running(APP) as url:
        yield url


View = tuple[int, list[bytes], str | None]  # status, the chunks read, the exception that ended it


class _Reading:
    """What a client does with the stream: acknowledges the first event once it has decoded it,
    stops at the event that says ``done`` (the httpx clients retry once after an HTTP error)."""

    def __init__(self, url: str) -> None:
        self.url, self.token = url, url.rsplit("t=", 1)[1]
        self.decoder = ssemock.sse.Decoder()

    def read(self, chunk: bytes) -> bool:
        """Whether the client has what it wanted (it then closes the stream)."""
        for event in self.decoder.feed(chunk):
            if event.event == "endpoint":
                ACKS.setdefault(self.token, threading.Event()).set()
            if "done" in event.data:
                return True
        return False


def _httpx(url: str) -> View:
    got: list[bytes] = []
    reading = _Reading(url)
    status = 0
    try:
        with httpx.Client(timeout=httpx.Timeout(5.0)) as client:
            for _ in range(2):
                got, reading.decoder = [], ssemock.sse.Decoder()
                with client.stream("GET", url) as response:
                    status = response.status_code
                    for chunk in response.iter_raw():
                        got.append(chunk)
                        if reading.read(chunk):
                            break
                if status < 400:
                    break
    except httpx.HTTPError as exc:
        return status, got, type(exc).__name__
    return status, got, None


def _httpx2_async(url: str) -> View:
    async def run() -> View:
        got: list[bytes] = []
        reading, status = _Reading(url), 0
        try:
            async with httpx2.AsyncClient(timeout=httpx2.Timeout(5.0)) as client:
                for _ in range(2):
                    got, reading.decoder = [], ssemock.sse.Decoder()
                    async with client.stream("GET", url) as response:
                        status = response.status_code
                        async for chunk in response.aiter_raw():
                            got.append(chunk)
                            if reading.read(chunk):
                                break
                    if status < 400:
                        break
        except httpx2.HTTPError as exc:
            return status, got, type(exc).__name__
        return status, got, None

    return asyncio.run(run())


def _aiohttp(url: str) -> View:
    async def run() -> View:
        got: list[bytes] = []
        reading, status = _Reading(url), 0
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=5.0)) as session,
                session.get(url) as response,
            ):
                status = response.status
                async for chunk in response.content.iter_any():
                    got.append(chunk)
                    if reading.read(chunk):
                        break
        except aiohttp.ClientError as exc:
            return status, got, type(exc).__name__
        return status, got, None

    return asyncio.run(run())


def _requests(url: str) -> View:
    got: list[bytes] = []
    reading, status = _Reading(url), 0
    try:
        with requests.get(url, stream=True, timeout=5) as response:
            status = response.status_code
            for chunk in response.iter_content(chunk_size=None):
                got.append(chunk)
                if reading.read(chunk):
                    break
    except requests.RequestException as exc:
        return status, got, type(exc).__name__
    return status, got, None


#: one client per stack of the registry (httpx sync, httpx2 async: both cores of the httpcore stacks)
READERS: dict[str, Callable[[str], View]] = {
    "httpx": _httpx,
    "httpx2": _httpx2_async,
    "aiohttp": _aiohttp,
    "urllib3": _requests,
}


def test_every_stack_of_the_registry_has_a_reader() -> None:
    assert set(READERS) == set(STACKS)


def _variants() -> dict[str, dict[str, Any]]:
    """Every chunking, every transform that rewrites an event stream, every fault in each of its
    modes (and each fault's example), from the registries: a new one is a new case here."""
    out: dict[str, dict[str, Any]] = {
        f"chunking={c}": {"chunking": c} for c in chunking.ALL if c.name != "as_recorded"
    }
    out |= {f"transform={t}": {"transform": t} for t in transforms.ALL if "sse" in t.kinds}
    names = dict.fromkeys([*faults.VARIANTS, *faults._EXAMPLES.values()])
    out |= {f"faults={f}": {"faults": f} for f in names if not _replay_only(f)}
    return out


def _replay_only(name: str) -> str | None:
    """Why a fault is served by a replay only (a recording run refuses it: see below)."""
    return getattr(faults.get(name), "replay_only", None)


@pytest.mark.parametrize("name", [f for f in faults._EXAMPLES.values() if _replay_only(f)])
def test_a_replay_only_fault_is_refused_by_a_recording_run_naming_it(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=rf"record_mode='once': .*{re.escape(name)}: .*record without them"):
        ssemock.use_cassette(tmp_path / "c.json", record_mode="once", faults=name)


VARIANTS = _variants()


def _refusals(options: dict[str, Any]) -> list[str]:
    """What the variant declares it needs the end for (on an event stream, at the first attempt)."""
    picked = faults.resolve(options.get("faults"))
    return needs_end(
        chunking.get(options.get("chunking", "as_recorded")),
        transforms.resolve(options.get("transform")),
        [_AtAttempt(f, 0) for f in picked],
        kind="sse",
    )


def _record_and_replay(
    base: str, path: str, read: Callable[[str], View], tmp: Path, options: dict[str, Any], **recording: Any
) -> tuple[View, View, ssemock.Response]:
    url = f"{base}{path}?t={uuid.uuid4()}"
    cassette = tmp / "c.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ssemock.SsemockWarning)  # (e): no warning of a stream served live
        with ssemock.use_cassette(
            cassette, **{"record_mode": "once", "drain_on_close": False, **recording}, **options
        ):
            recorded = read(url)
    (x,) = ssemock.Cassette.load(cassette).interactions
    with ssemock.use_cassette(cassette, record_mode="none", **options):
        replayed = read(url)
    return recorded, replayed, x.response


def _assert_both_ways(
    recorded: View, replayed: View, response: ssemock.Response, writes: list[bytes]
) -> None:
    status, chunks, error = recorded
    body = b"".join(chunks)
    # (a) what the client got: the replay's bytes, status and exception ...
    assert (status, body, error) == (replayed[0], b"".join(replayed[1]), replayed[2])
    # ... cut where the replay cuts, or at an event boundary where a live event had not arrived yet
    boundaries = _ends(replayed[1]) | set(framing.event_ends(body, SSE))
    assert _ends(chunks) <= boundaries | {len(body)}
    # (b) the cassette: the live stream as it arrived, whole writes (all of them once the client read to the end)
    sent = [b"".join(writes[:k]) for k in range(1, len(writes) + 1)]
    assert response.body in sent
    if b"done" in body:
        assert response.body == sent[-1]
    # (c) the client had the first event while the stream was live: the server got its acknowledgement
    assert b"late" not in response.body


def _ends(chunks: list[bytes]) -> set[int]:
    out, at = set(), 0
    for chunk in chunks:
        at += len(chunk)
        out.add(at)
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_is_served_as_its_replay_or_refused_naming_it(
    tmp_path: Path, push_server: str, variant: str
) -> None:
    options = VARIANTS[variant]
    refused = _refusals(options)
    if refused:  # (d): one clear error when the live response begins, naming the variant
        token = str(uuid.uuid4())
        with pytest.raises(ssemock.RecordingVariantError) as raised:
            with ssemock.use_cassette(tmp_path / "c.json", record_mode="once", **options):
                assert httpx.post(f"{push_server}/ack?t={token}").status_code == 202
                _httpx(f"{push_server}/mcp-sse?t={token}")
        message = str(raised.value)
        name = str(next(iter(options.values())))
        assert name in message and "server-push" in message and str(tmp_path / "c.json") in message
        assert "GET " in message and "record the cassette first without it" in message
        # what was recorded before is saved, and nothing of the refused stream
        assert [x.request.method for x in ssemock.Cassette.load(tmp_path / "c.json").interactions] == ["POST"]
        return
    recorded, replayed, response = _record_and_replay(push_server, "/mcp-sse", _httpx, tmp_path, options)
    _assert_both_ways(recorded, replayed, response, MCP)


CROSS = {  # through every stack: a chunking, a transform and the faults that stop, stall, end or replace it
    "bytewise": {"chunking": "bytewise"},
    "crlf+per_event": {"transform": "crlf", "chunking": "per_event"},
    "disconnect": {"faults": "disconnect:after_event=2"},
    "stall": {"faults": "stall:before_event=2,seconds=60"},
    "error_event": {"faults": "error_event:kind=overloaded_error,after_event=1"},
    "http_error": {"faults": "sequence:http_error:status=503|as_recorded"},
}


@pytest.mark.parametrize("variant", CROSS)
@pytest.mark.parametrize("stack", READERS)
def test_every_stack_serves_a_push_stream_as_its_replay(
    tmp_path: Path, push_server: str, stack: str, variant: str
) -> None:
    path = "/plain" if variant in ("bytewise", "crlf+per_event") else "/mcp-sse"
    recorded, replayed, response = _record_and_replay(
        push_server, path, READERS[stack], tmp_path, CROSS[variant]
    )
    _assert_both_ways(recorded, replayed, response, WRITES[path])
    if variant != "http_error":
        assert len(recorded[1]) > 1  # served in pieces as they came, not at the end
    elif stack in (
        "httpx",
        "httpx2",
    ):  # they retry: the retry gets the live stream as it goes on, to its answer
        assert recorded[0] == 200 and b'"done"' in b"".join(recorded[1])
    else:
        assert recorded[0] == 503


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all", "rewrite"])
def test_every_record_mode_serves_it_as_it_arrives(tmp_path: Path, push_server: str, mode: str) -> None:
    options = {"faults": "disconnect:after_event=3", "transform": "crlf"}
    url = f"{push_server}/mcp-sse?t={uuid.uuid4()}"
    if mode != "once":  # an old recording of another request
        old = ssemock.Cassette()
        old.add("POST", f"{push_server}/other", [b"data: old\n\n"], headers={"content-type": SSE})
        old.save(tmp_path / "c.json")
    with ssemock.use_cassette(tmp_path / "c.json", record_mode=mode, drain_on_close=False, **options):
        recorded = _httpx(url)
    with ssemock.use_cassette(
        tmp_path / "c.json", record_mode="none", allow_playback_repeats=True, **options
    ):
        replayed = _httpx(url)
    (x,) = [x for x in ssemock.Cassette.load(tmp_path / "c.json").interactions if x.request.method == "GET"]
    _assert_both_ways(recorded, replayed, x.response, MCP)
    assert recorded[2] == "RemoteProtocolError"


@pytest.mark.parametrize(
    "fault", ["disconnect:after_event=1", "error_event:kind=overloaded_error,after_event=1"]
)
@pytest.mark.parametrize("stack", READERS)
def test_the_cassette_gets_the_whole_stream_the_fault_kept_from_the_client(
    tmp_path: Path, push_server: str, stack: str, fault: str
) -> None:
    """A push stream that does end: the client stops at the fault, and the rest is drained into
    the recording (``drain_on_close``) as it arrives; the replay of that whole recording gives the
    client what the recording run gave it (the MCP error event fails the request the stream
    answers next, which the recording run waited for)."""
    recorded, replayed, response = _record_and_replay(
        push_server, "/ending", READERS[stack], tmp_path, {"faults": fault}, drain_on_close=5.0
    )
    assert recorded == replayed
    if fault.startswith("disconnect"):
        assert response.body == b"".join(MCP) and response.complete  # all of it, as it arrived
        assert b"".join(recorded[1]) == MCP[0] and recorded[2] is not None
    else:  # the client closes after the answer it waited for: the protocol's end, nothing to drain
        assert response.body == b"".join(MCP[:2]) and response.complete
        assert b'"id":1,"error"' in b"".join(recorded[1]) and recorded[2] is None


def test_a_recording_cut_at_max_body_bytes_ends_the_clients_stream_there_too(
    tmp_path: Path, push_server: str
) -> None:
    url, options = f"{push_server}/mcp-sse?t={uuid.uuid4()}", {"transform": "crlf"}
    with pytest.warns(ssemock.SsemockWarning, match="max_body_bytes=100"):
        with ssemock.use_cassette(tmp_path / "c.json", record_mode="once", max_body_bytes=100, **options):
            recorded = _httpx(url)
    with ssemock.use_cassette(tmp_path / "c.json", **options):
        replayed = _httpx(url)
    assert recorded == replayed and recorded[2] == "RemoteProtocolError"
    assert b"".join(recorded[1]) == b"".join(MCP)[:100].replace(b"\n", b"\r\n")


def test_a_stall_is_slept_on_the_clock_as_in_replay(
    tmp_path: Path, push_server: str, fake_clock: Any
) -> None:
    options = {"faults": "stall:before_event=2,seconds=0.5", "timing": "recorded"}
    recorded, replayed, response = _record_and_replay(push_server, "/mcp-sse", _httpx, tmp_path, options)
    _assert_both_ways(recorded, replayed, response, MCP)
    assert fake_clock.slept.count(0.5) == 2  # once on the recording run, once on the replay (and the gaps)


def test_a_plan_that_would_change_what_the_client_has_is_an_error_naming_it(
    tmp_path: Path, push_server: str
) -> None:
    """The client's bytes are never taken back: a hook that rewrites the body as a whole (here it
    appends a trailer) makes the next plan disagree with what was served, which raises."""

    def trailer(response: ssemock.Response) -> ssemock.Response:
        body = response.body + b": recorded by ssemock\n\n"
        return dataclasses.replace(
            response,
            body=body,
            ends=[*response.ends, len(body)],
            times=[*response.times, response.times[-1] if response.times else 0.0],
        )

    with pytest.raises(ssemock.RecordingVariantError, match=r"changes the \d+ bytes the client already has"):
        with ssemock.use_cassette(
            tmp_path / "c.json",
            record_mode="once",
            transform="crlf",
            drain_on_close=False,
            before_record_response=trailer,
        ):
            _httpx(f"{push_server}/mcp-sse?t={uuid.uuid4()}")


def test_under_pytest_both_runs_pass_alike_with_no_warning(
    pytester: pytest.Pytester, push_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin: the recording run and the replay run of a test that reads a push stream (and
    POSTs its acknowledgement, as an MCP client POSTs to the endpoint) pass alike, and neither
    warns (the stream read to where the client stopped counts as read to its end both ways)."""
    monkeypatch.setenv("SSEMOCK_PUSH_SERVER", push_server)
    pytester.makepyfile(
        test_push="""
import os, httpx, pytest, ssemock

@pytest.mark.ssemock(transform="crlf", chunking="mid_line", drain_on_close=False)
def test_push(ssemock):
    base, events = os.environ["SSEMOCK_PUSH_SERVER"], []
    decoder = __import__("ssemock").sse.Decoder()
    with httpx.stream("GET", base + "/mcp-sse?t=pytester") as response:
        for chunk in response.iter_raw():
            got = decoder.feed(chunk)
            for event in got:
                events.append(event.event)
                if event.event == "endpoint":
                    assert httpx.post(base + "/ack?t=pytester").status_code == 202
            if any("done" in event.data for event in got):
                break
    assert events == ["endpoint", "message", "message", "message"]
"""
    )
    for mode in ("once", "none"):
        result = pytester.runpytest("-p", "no:randomly", f"--ssemock-record-mode={mode}")
        result.assert_outcomes(passed=1, warnings=0)


# -- the declarations: a prefix's plan is the start of the whole's --------------------------------

BODY = b"".join(MCP)
RECORDED = Response(
    200,
    [("content-type", SSE)],
    BODY,
    [len(MCP[0]), len(MCP[0]) + len(MCP[1]) - 7, len(BODY)],
    [0.01, 0.02, 0.03],
)


def _plan(response: Response, more: bool, options: dict[str, Any]) -> Any:
    return plan_response(
        response,
        url="http://127.0.0.1/sse",
        core=httpcore,
        chunking=chunking.get(options.get("chunking", "as_recorded")),
        transforms=transforms.resolve(options.get("transform")),
        faults=faults.resolve(options.get("faults")),
        more=more,
        read_timeout=5.0,
    )


@pytest.mark.parametrize("variant", [v for v in VARIANTS if not _refusals(VARIANTS[v])])
def test_a_streamable_variant_plans_every_event_prefix_as_the_start_of_the_whole(variant: str) -> None:
    options = VARIANTS[variant]
    whole = _plan(RECORDED, False, options)
    for end in [0, *framing.event_ends(BODY, SSE)]:
        part = _plan(prefix(RECORDED, end), True, options)
        assert (part.status, part.headers) == (whole.status, whole.headers)  # answered at once
        if part.status != RECORDED.status and not end:
            continue  # an HTTP error's body waits for the first event: its shape may follow the stream's protocol
        assert whole.body.startswith(part.body)
        # nothing decided yet: the body is all of the prefix, its chunk ends the whole's up to the seam
        if part.open:
            assert set(part.ends[:-1]) <= set(whole.ends)
        else:  # a fault decided the end within the prefix: what the whole serves
            assert (part.body, part.status, type(part.error)) == (whole.body, whole.status, type(whole.error))

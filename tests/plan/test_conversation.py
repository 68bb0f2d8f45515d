"""permessage-deflate and the recorded TCP reads on replay (issue 34 item 2, issue 35 item 2),
through every stack of `ssemock.stacks.WS_STACKS` with the real client library: a Realtime session
recorded against a loopback ``websockets`` server (which agrees to permessage-deflate when it is
offered), the server stopped, then replayed offline. What the client library reads is observed
where it reads it (its protocol's ``receive_data``/``data_received``), so the reads, their sizes
and their RSV1 bits are the client's own."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ws_servers import realtime, running

import ssemock
from ssemock.framing.websocket import FrameParser, Opcode
from ssemock.plan.errors import SsemockWarning
from ssemock.plan.websocket.variants import VariantRefused
from ssemock.stacks import WS_STACKS

KEY = {"authorization": "Bearer sk-test-ws34deflateabcdefgh"}
URL_PATH = "/v1/realtime?model=gpt-realtime"
UPDATE = {"type": "session.update", "session": {"instructions": "Be brief."}}
CREATE = {"type": "response.create"}
STACKS = sorted(WS_STACKS)


# -- one Realtime session per stack: (texts received, whether permessage-deflate was agreed) --------


async def _asyncio(url: str, deflate: bool, extensions: Any = None) -> tuple[list[str], bool]:
    from websockets.asyncio.client import connect

    options: dict[str, Any] = {"extensions": extensions} if extensions else {}
    async with connect(
        url, additional_headers=KEY, compression="deflate" if deflate else None, **options
    ) as ws:
        seen = [str(await ws.recv())]
        await ws.send(json.dumps(UPDATE))
        seen.append(str(await ws.recv()))
        await ws.send(json.dumps(CREATE))
        seen += [str(await ws.recv()) for _ in range(7)]
        return seen, bool(ws.protocol.extensions)


def _sync(url: str, deflate: bool) -> tuple[list[str], bool]:
    from websockets.sync.client import connect

    with connect(url, additional_headers=KEY, compression="deflate" if deflate else None) as ws:
        seen = [str(ws.recv())]
        ws.send(json.dumps(UPDATE))
        seen.append(str(ws.recv()))
        ws.send(json.dumps(CREATE))
        seen += [str(ws.recv()) for _ in range(7)]
        return seen, bool(ws.protocol.extensions)


async def _legacy(url: str, deflate: bool) -> tuple[list[str], bool]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from websockets.legacy.client import connect

    async with connect(url, extra_headers=KEY, compression="deflate" if deflate else None) as ws:
        seen = [str(await ws.recv())]
        await ws.send(json.dumps(UPDATE))
        seen.append(str(await ws.recv()))
        await ws.send(json.dumps(CREATE))
        seen += [str(await ws.recv()) for _ in range(7)]
        return seen, bool(ws.extensions)


async def _aiohttp(url: str, deflate: bool) -> tuple[list[str], bool]:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(url, headers=KEY, compress=15 if deflate else 0) as ws:
            seen = [await ws.receive_str()]
            await ws.send_str(json.dumps(UPDATE))
            seen.append(await ws.receive_str())
            await ws.send_str(json.dumps(CREATE))
            seen += [await ws.receive_str() for _ in range(7)]
            return seen, bool(ws.compress)


def _run(stack: str, url: str, deflate: bool = True) -> tuple[list[str], bool]:
    if stack == "websockets":
        return asyncio.run(_asyncio(url, deflate))
    if stack == "websockets.sync":
        return _sync(url, deflate)
    if stack == "websockets.legacy":
        return asyncio.run(_legacy(url, deflate))
    assert stack == "aiohttp.ws", f"a WebSocket stack this test does not know: {stack}"
    return asyncio.run(_aiohttp(url, deflate))


# -- the client's reads ------------------------------------------------------------------------------


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every read the client libraries take in (the 101 head's first), wherever each reads."""
    import aiohttp.client_proto
    import websockets.protocol
    import wsproto.connection

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import websockets.legacy.protocol

    seen: list[bytes] = []
    refeeding = [False]

    def watch(cls: Any, name: str) -> None:
        original = getattr(cls, name)

        def wrapped(self: Any, data: bytes, *args: Any, **kwargs: Any) -> Any:
            if not refeeding[0]:
                seen.append(bytes(data))
            was, refeeding[0] = refeeding[0], True  # aiohttp hands itself the tail again, inside
            try:
                return original(self, data, *args, **kwargs)
            finally:
                refeeding[0] = was

        monkeypatch.setattr(cls, name, wrapped)

    watch(websockets.protocol.Protocol, "receive_data")  # the asyncio and sync clients
    watch(websockets.legacy.protocol.WebSocketCommonProtocol, "data_received")
    watch(wsproto.connection.Connection, "receive_data")  # httpx-ws (its handshake's answer is httpcore's)
    handler = aiohttp.client_proto.ResponseHandler
    watch(handler, "data_received")
    name = "_drain_tail" if hasattr(handler, "_drain_tail") else "set_parser"  # aiohttp 3.14 / before
    drain = getattr(handler, name)

    def drain_again(self: Any, *args: Any, **kwargs: Any) -> Any:
        was, refeeding[0] = refeeding[0], True  # aiohttp hands itself again what came after the 101
        try:
            return drain(self, *args, **kwargs)
        finally:
            refeeding[0] = was

    monkeypatch.setattr(handler, name, drain_again)
    return seen


def _after_head(seen: list[bytes]) -> list[bytes]:
    """The reads of the server's frames: the first read's bytes after the handshake's answer (a
    replay serves them with it when the recording got them with it), then the others."""
    assert seen and seen[0].startswith(b"HTTP/1.1 101 "), seen[:1]
    first = seen[0][seen[0].index(b"\r\n\r\n") + 4 :]
    return [first, *seen[1:]] if first else seen[1:]


def _compressed(server_reads: list[bytes]) -> list[bool]:
    """RSV1 of each data frame the server's bytes carry."""
    frames = FrameParser(masked=False).feed(b"".join(server_reads))
    return [f.rsv1 for f in frames if f.opcode in (Opcode.TEXT, Opcode.BINARY)]


def _sizes(ends: list[int]) -> list[int]:
    return [b - a for a, b in zip([0, *ends], ends)]


def _assert_same_reads(reads: list[bytes], ends: list[int]) -> None:
    """The sizes of ``reads`` are the recorded chunks' (``ends``), but for the answer to the
    client's close (a 4-byte close frame), which either run may have left unread."""
    recorded, got = _sizes(ends), [len(r) for r in reads]
    n = min(len(recorded), len(got))
    assert n >= 3 and got[:n] == recorded[:n], (got, recorded)
    assert recorded[n:] + got[n:] in ([], [4]), (got, recorded)


@pytest.fixture(scope="module")
def recordings(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str, bool], tuple[Path, str, list[str]]]]:
    """``record(stack, deflate)``: the session recorded once per stack and offer (cached), the
    server stopped afterwards."""
    folder = tmp_path_factory.mktemp("ws-deflate")
    done: dict[tuple[str, bool], tuple[Path, str, list[str]]] = {}
    with running(realtime) as server:
        url = server.url(URL_PATH)

        def record(stack: str, deflate: bool = True) -> tuple[Path, str, list[str]]:
            if (stack, deflate) not in done:
                path = folder / f"{stack}-{deflate}.json"
                with ssemock.use_cassette(path, record_mode="once"):
                    live, agreed = _run(stack, url, deflate)
                assert agreed == deflate  # the loopback server agrees whenever it is offered
                done[(stack, deflate)] = (path, url, live)
            return done[(stack, deflate)]

        yield record


def _replay(
    path: Path, stack: str, url: str, deflate: bool = True, **options: Any
) -> tuple[list[str], bool, Any]:
    with ssemock.use_cassette(
        path, record_mode="none", allowed_hosts=[], timing="instant", **options
    ) as player:
        seen, agreed = _run(stack, url, deflate)
    return seen, agreed, player


def _notes(caught: list[warnings.WarningMessage]) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, SsemockWarning) and "not the bytes recorded" in str(w.message)
    ]


# -- the tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_deflate_is_agreed_again_and_the_recorded_reads_are_served(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str
) -> None:
    path, url, live = recordings(stack)
    reads.clear()  # the recording's own reads (a first run records)
    session = ssemock.Cassette.load(path).interactions[0].websocket
    assert session is not None and session.extensions is not None
    assert "permessage-deflate" in session.extensions and session.wire.sha256 is not None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again, agreed, player = _replay(path, stack, url)
    assert again == live and agreed  # the handshake's answer agreed to it, and the client took it
    server = _after_head(reads)
    assert all(_compressed(server)) and len(_compressed(server)) == len(live)  # RSV1 on every message
    _assert_same_reads(server, session.wire.ends)  # the client's reads are the recorded ones
    [conversation] = player.conversations
    assert conversation.wire_fits() and conversation.wire_note() is None and not _notes(caught)


@pytest.mark.parametrize("stack", STACKS)
def test_the_reads_are_cut_where_the_wire_map_says(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str, tmp_path: Path
) -> None:
    """The wire map decides the reads: a map cut again by hand (the same bytes: its SHA-256 still
    holds), 2 bytes into every recorded read (inside a frame header) and 3 bytes before its end
    (inside a compressed payload), is what the client reads (the last read, maybe the answer to
    the client's close, aside)."""
    path, url, live = recordings(stack)
    reads.clear()
    raw = json.loads(path.read_text())
    wire = raw["interactions"][0]["websocket"]["wire"]
    ends = [end for _, end in wire["chunks"]]
    inner = ends[:-1]  # the last read may be the answer to the client's close, which is not cut
    cut = sorted({*ends, *(a + 2 for a in [0, *inner[:-1]]), *(e - 3 for e in inner)})
    assert len(cut) > len(ends) and all(b > a for a, b in zip([0, *cut], cut))
    wire["chunks"] = [[k / 10, end] for k, end in enumerate(cut)]
    recut = tmp_path / "recut.json"
    recut.write_text(json.dumps(raw))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again, agreed, _ = _replay(recut, stack, url)
    assert again == live and agreed and not _notes(caught)
    _assert_same_reads(_after_head(reads), cut)


@pytest.mark.parametrize("stack", STACKS)
def test_frames_that_came_with_the_101_come_with_it_again(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str, tmp_path: Path
) -> None:
    """A recording whose first read held the 101 and the first server frames (``wire.head``, set
    here by hand) is replayed so: the client reads the answer and those frames in one read."""
    path, url, live = recordings(stack)
    reads.clear()
    raw = json.loads(path.read_text())
    wire = raw["interactions"][0]["websocket"]["wire"]
    ends = [end for _, end in wire["chunks"]]
    wire["head"] = ends[0]
    joined = tmp_path / "joined.json"
    joined.write_text(json.dumps(raw))
    again, agreed, _ = _replay(joined, stack, url)
    assert again == live and agreed
    first = reads[0]
    assert first.startswith(b"HTTP/1.1 101 ") and len(first) == first.index(b"\r\n\r\n") + 4 + ends[0]
    frames = FrameParser(masked=False).feed(first[first.index(b"\r\n\r\n") + 4 :])
    assert [f.opcode for f in frames] == [Opcode.TEXT] and frames[0].rsv1  # session.created, compressed
    _assert_same_reads(reads[1:], [e - ends[0] for e in ends[1:]])


@pytest.mark.parametrize("stack", STACKS)
def test_an_edited_message_replays_valid_one_read_per_message_said_once(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str, tmp_path: Path
) -> None:
    path, url, live = recordings(stack)
    reads.clear()  # the recording's own reads (a first run records)
    edited = tmp_path / "edited.json"
    text = path.read_text()
    assert text.count('\\"delta\\": \\"Sun\\"') == 1
    edited.write_text(text.replace('\\"delta\\": \\"Sun\\"', '\\"delta\\": \\"Mond über Köln\\"'))
    with pytest.warns(SsemockWarning) as caught:
        again, agreed, player = _replay(edited, stack, url)
    assert agreed and again == [m.replace('"delta": "Sun"', '"delta": "Mond über Köln"') for m in live]
    server = _after_head(reads)
    assert all(_compressed(server))  # compressed anew from the edited (decompressed) message
    messages = [f for f in FrameParser(masked=False).feed(b"".join(server)) if f.opcode != Opcode.CLOSE]
    assert [len(r) for r in server][: len(messages)] == [f.end - f.start for f in messages]  # one read each
    [note] = _notes(list(caught))  # said once, not per frame
    assert "interaction #0" in note and "each frame is served in its own read" in note


@pytest.mark.parametrize("stack", STACKS)
def test_a_client_that_offers_no_deflate_gets_plain_frames(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str
) -> None:
    path, url, live = recordings(stack)
    reads.clear()  # the recording's own reads (a first run records)
    with pytest.warns(SsemockWarning) as caught:
        again, agreed, _ = _replay(path, stack, url, deflate=False)
    assert again == live and not agreed
    assert _compressed(_after_head(reads)) == [False] * len(live)
    [note] = _notes(list(caught))
    assert "the recording agreed to permessage-deflate and this client did not offer it" in note


@pytest.mark.parametrize("stack", STACKS)
def test_no_deflate_refuses_the_extension_deflate_agrees_where_offered(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes], stack: str
) -> None:
    path, url, live = recordings(stack)
    reads.clear()  # the recording's own reads (a first run records)
    again, agreed, _ = _replay(path, stack, url, transform="no_deflate")
    assert again == live and not agreed and _compressed(_after_head(reads)) == [False] * len(live)
    plain, _, plain_live = recordings(stack, deflate=False)  # recorded with no deflate at all
    reads.clear()
    again, agreed, _ = _replay(plain, stack, url, transform="deflate")
    assert again == plain_live and agreed and _compressed(_after_head(reads)) == [True] * len(live)
    with pytest.raises(VariantRefused, match="offered no permessage-deflate.*openai SDK offers none"):
        _replay(plain, stack, url, deflate=False, transform="deflate")


def test_the_answer_follows_the_client_s_own_offer(
    recordings: Callable[..., tuple[Path, str, list[str]]], reads: list[bytes]
) -> None:
    """A client that asks for the server's window at 10 bits and no context takeover gets them
    (websockets' client refuses an answer that breaks its offer); the bytes then differ from the
    recording's (12 bits, context kept): the messages are the same, the reads one per message."""
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

    path, url, live = recordings("websockets")
    reads.clear()
    offer = ClientPerMessageDeflateFactory(server_no_context_takeover=True, server_max_window_bits=10)
    with pytest.warns(SsemockWarning, match="a message, the frame map or the compression differs"):
        with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], timing="instant") as player:
            again, agreed = asyncio.run(_asyncio(url, True, extensions=[offer]))
    assert again == live and agreed
    [conversation] = player.conversations
    assert conversation.deflate is not None
    assert (
        conversation.deflate.header()
        == "permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits=12"
    )
    assert all(_compressed(_after_head(reads)))


def test_httpx_ws_reads_are_the_recorded_ones(tmp_path: Path, reads: list[bytes]) -> None:
    """httpx-ws (over httpx's pool patch, beside the registry) offers no compression: the
    recording is plain, and the replay's reads are the recorded ones too."""
    import httpx
    from httpx_ws import connect_ws

    def run(url: str) -> list[str]:
        with httpx.Client(headers=KEY) as client, connect_ws(url, client) as ws:
            seen = [ws.receive_text()]
            ws.send_text(json.dumps(UPDATE))
            seen.append(ws.receive_text())
            ws.send_text(json.dumps(CREATE))
            return seen + [ws.receive_text() for _ in range(7)]

    path = tmp_path / "httpx-ws.json"
    with running(realtime) as server:
        url = server.url(URL_PATH, scheme="http")
        with ssemock.use_cassette(path, record_mode="once"):
            live = run(url)
    session = ssemock.Cassette.load(path).interactions[0].websocket
    assert session is not None and session.extensions is None and session.wire.sha256 is not None
    reads.clear()
    with ssemock.use_cassette(path, record_mode="none", allowed_hosts=[], timing="instant") as player:
        assert run(url) == live
    served = [r for r in reads if r]  # its handshake's answer never reaches wsproto on replay
    _assert_same_reads(served, session.wire.ends)
    assert _compressed(served) == [False] * len(live) and player.conversations[0].wire_note() is None


def test_a_recorded_read_is_due_when_it_arrived() -> None:
    """Sans-IO: the first 100 bytes of a 300-byte message came 60 ms before the rest; the replay
    hands them to the client at their own recorded time, not at the message's."""
    from ssemock.framing.websocket import encode_frame
    from ssemock.plan.websocket.variants import VariedConversation
    from ssemock.store.model import Interaction, Request, Response
    from ssemock.store.websocket import Close, Message, WebSocket, Wire

    messages = [
        Message("recv", 0.10, "text", "a" * 300),  # 304 bytes on the wire
        Message("send", 0.20, "text", "go"),
        Message("recv", 0.35, "text", "b" * 10),  # 12 bytes
        Message("recv", 0.36, "text", "c" * 20),  # 22 bytes
    ]
    wire = Wire(0, [100, 304, 321, 338], [0.04, 0.10, 0.35, 0.36])
    session = WebSocket(messages, wire=wire, close=Close(1000, "", "client", True, 0.4))
    conv = VariedConversation(Interaction(Request("GET", "ws://127.0.0.1:9/x"), Response(101), session))
    assert conv.wire_fits()  # no SHA-256 in this map: its length decides
    opening = conv.opening()
    assert [(len(r.data or b""), round(r.delay, 6)) for r in opening] == [(100, 0.04), (204, 0.10)]
    later = conv.feed(encode_frame(Opcode.TEXT, b"go", mask=b"abcd"))
    assert [(len(r.data or b""), round(r.delay, 6)) for r in later] == [(17, 0.15), (17, 0.16)]


def test_a_deflate_run_for_a_client_that_offers_none_is_skipped_with_the_reason(
    pytester: pytest.Pytester,
) -> None:
    """Under pytest, ``transform="deflate"`` for a client that offers no permessage-deflate is a
    skipped run saying why; for one that offers it, a run that passes."""
    pytester.makepyfile(
        test_deflate_cells="""
import json

import pytest
from websockets.sync.client import connect

import ssemock
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket

URL = "ws://127.0.0.1:9/v1/realtime?model=gpt-realtime"


@pytest.fixture
def cassette(tmp_path):
    session = WebSocket(
        [Message("recv", 0.01, "text", json.dumps({"type": "session.created"}))],
        close=Close(1000, "", "client", True),
    )
    path = tmp_path / "plain.json"
    ssemock.Cassette([Interaction(Request("GET", URL), Response(101), session)]).save(path)
    return path


@pytest.mark.parametrize("compression", ["deflate", None])
def test_cell(cassette, compression):
    with ssemock.use_cassette(cassette, record_mode="none", transform="deflate"):
        with connect(URL, compression=compression) as ws:
            assert json.loads(ws.recv())["type"] == "session.created"
            assert bool(ws.protocol.extensions) is True
"""
    )
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*SKIPPED*the WebSocket variant deflate: the client offered no permessage-deflate*"]
    )


def test_the_wire_digest_is_kept_and_a_bad_one_named(tmp_path: Path) -> None:
    from ssemock.store.model import Interaction, Request, Response
    from ssemock.store.websocket import Message, WebSocket, Wire

    digest = "ab" * 32
    session = WebSocket([Message("recv", 0.01, "text", "{}")], wire=Wire(0, [4], [0.01], digest))
    path = tmp_path / "digest.json"
    ssemock.Cassette([Interaction(Request("GET", "ws://127.0.0.1:9/x"), Response(101), session)]).save(path)
    loaded = ssemock.Cassette.load(path).interactions[0].websocket
    assert loaded is not None and loaded.wire.sha256 == digest
    path.write_text(path.read_text().replace(digest, "not-a-digest"))
    with pytest.raises(ssemock.CassetteError) as failed:
        ssemock.Cassette.load(path)
    text = str(failed.value)
    assert "digest.json" in text and "websocket.wire.sha256" in text and "'not-a-digest'" in text
    assert "delete it" in text


def test_reads_that_cannot_be_kept_are_one_frame_each() -> None:
    """Sans-IO: a fragmented message (two frames) whose wire map no longer fits (the message was
    edited by hand) is served one frame a read."""
    from ssemock.plan.websocket.variants import VariedConversation
    from ssemock.store.model import Interaction, Request, Response
    from ssemock.store.websocket import FrameNote, Message, WebSocket, Wire

    edited = Message("recv", 0.01, "text", "hello, edited world")  # recorded: 10 bytes, cut at 5
    session = WebSocket([edited], [FrameNote("recv", 0, "fragments", [5])], Wire(0, [8, 14], [0.0, 0.01]))
    conv = VariedConversation(Interaction(Request("GET", "ws://127.0.0.1:9/x"), Response(101), session))
    assert [len(r.data or b"") for r in conv.opening() if r.data] == [2 + 5, 2 + 14]
    assert not conv.wire_fits() and "each frame is served in its own read" in (conv.wire_note() or "")

"""WebSocket variants as pure functions: wire chunkings (byte-exact, cut where their names say,
never across a group), re-framings (the messages unchanged, as websockets' own client reads
them), and faults (as websockets' client reports them)."""

from __future__ import annotations

import json

import pytest
from websockets.client import ClientProtocol
from websockets.extensions.permessage_deflate import PerMessageDeflate
from websockets.frames import Opcode as WsOpcode
from websockets.protocol import State
from websockets.uri import parse_uri

from ssemock.framing.websocket import Opcode, parse_frames
from ssemock.variants.websocket import chunking as ws_chunking
from ssemock.variants.websocket import faults as ws_faults
from ssemock.variants.websocket import frames as ws_frames
from ssemock.variants.websocket.faults import Session
from ssemock.variants.websocket.frames import ServerMessage
from ssemock.variants.websocket.serve import serve

TEXTS = ['{"type":"session.created"}', '{"delta":"Grüße — 東京 🌏"}', "x" * 300, '{"type":"response.done"}']
MESSAGES = tuple(ServerMessage(Opcode.TEXT, t.encode(), group=0 if i < 2 else 1) for i, t in enumerate(TEXTS))
GEMINI = (
    ServerMessage(Opcode.BINARY, b'{"setupComplete":{}}'),
    ServerMessage(Opcode.BINARY, '{"serverContent":{"modelTurn":{"parts":[{"text":"é"}]}}}'.encode(), 1),
)


def _client(deflate: bool = False) -> ClientProtocol:
    client = ClientProtocol(parse_uri("ws://127.0.0.1/"), state=State.OPEN)
    if deflate:
        client.extensions = [PerMessageDeflate(False, False, 15, 15)]
    return client


def _read(reads: list[bytes], deflate: bool = False) -> tuple[list[bytes], list[bytes], ClientProtocol]:
    """websockets' client fed the reads: the messages, the pongs it answers, the protocol."""
    client = _client(deflate)
    for data in reads:
        client.receive_data(data)
    messages, current = [], b""
    for frame in client.events_received():
        if frame.opcode in (WsOpcode.TEXT, WsOpcode.BINARY, WsOpcode.CONT):
            current += bytes(frame.data)
            if frame.fin:
                messages.append(current)
                current = b""
    pongs = [f for f in parse_frames(b"".join(client.data_to_send()), masked=True) if f.opcode == Opcode.PONG]
    return messages, [p.payload for p in pongs], client


@pytest.mark.parametrize("chunking", ws_chunking.names())
def test_every_wire_chunking_is_byte_exact_and_keeps_the_groups(chunking: str) -> None:
    served = serve(Session(MESSAGES), chunking=chunking)
    reads = [r.data for r in served.reads]
    assert b"".join(reads) == served.wire.data
    assert [r.group for r in served.reads] == sorted(r.group for r in served.reads)  # no read spans two
    group_end = served.wire.group_ends[0]
    assert group_end in {sum(map(len, reads[:k])) for k in range(len(reads) + 1)}
    messages, _, _ = _read(reads)
    assert messages == [m.data for m in MESSAGES]


def test_the_wire_chunkings_cut_where_their_names_say() -> None:
    wire = ws_frames.encode(MESSAGES).data
    frames = parse_frames(wire)
    header = ws_chunking.mid_header.ends(wire)
    assert all(f.start + 1 in header for f in frames) and frames[2].start + 3 in header  # a 16-bit length
    utf8 = ws_chunking.mid_utf8.ends(wire)
    second = frames[1]
    inside = [e for e in utf8 if second.start < e < second.end]
    assert len(inside) == 6 and all(0x80 <= wire[e] < 0xC0 for e in inside)  # ü, ß, —, 東, 京, 🌏
    assert ws_chunking.per_event.ends(wire) == [f.end for f in frames]
    assert serve(Session(MESSAGES), chunking="coalesced").reads[0].data == wire[: frames[1].end]
    gemini = ws_frames.encode(GEMINI).data  # binary frames holding UTF-8 are text to mid_utf8
    assert any(0x80 <= gemini[e] < 0xC0 for e in ws_chunking.mid_utf8.ends(gemini)[:-1])
    assert ws_chunking.get("random:3").ends(wire) == ws_chunking.get("random:3").ends(wire)


def test_http_only_names_are_refused_with_the_websocket_ones() -> None:
    with pytest.raises(ValueError, match="cuts HTTP bodies, not WebSocket frames; .*mid_header"):
        ws_chunking.get("mid_line")
    with pytest.raises(ValueError, match="did you mean 'mid_header'"):
        ws_chunking.get("mid_headr")
    assert [c.name for c in ws_chunking.resolve("all")] == list(ws_chunking.names())


@pytest.mark.parametrize(
    "reframing", ["fragments:3", "fragments:7", "pings", "fragments:2+pings", "no_deflate"]
)
def test_reframings_leave_the_messages_as_websockets_reads_them(reframing: str) -> None:
    served = serve(Session(MESSAGES), reframing=reframing, chunking="bytewise")
    messages, pongs, _ = _read([r.data for r in served.reads])
    assert messages == [m.data for m in MESSAGES] and pongs == served.pings
    frames = parse_frames(served.wire.data)
    if "fragments" in reframing:
        data = served.wire.data
        second = [data[f.body : f.end] for f in served.wire.frames if f.message == 1]
        assert len(second) > 1 and b"".join(second) == MESSAGES[1].data
        with pytest.raises(UnicodeDecodeError):  # a fragment boundary inside a character
            [part.decode() for part in second]
    if "pings" in reframing:
        assert served.pings and all(f.opcode != Opcode.PING for f in frames[:1])


def test_deflate_compresses_every_message_and_needs_the_client_s_offer() -> None:
    served = serve(Session(MESSAGES), reframing="deflate", chunking="mid_header")
    frames = parse_frames(served.wire.data)
    assert all(f.rsv1 for f in frames) and len(served.wire.data) < sum(len(m.data) for m in MESSAGES)
    messages, _, _ = _read([r.data for r in served.reads], deflate=True)
    assert messages == [m.data for m in MESSAGES]
    assert ws_frames.deflate.refuses(offered_deflate=True) is None
    assert "openai SDK offers none" in (ws_frames.deflate.refuses(offered_deflate=False) or "")
    plain = serve(Session(MESSAGES), reframing="no_deflate")
    assert not any(f.rsv1 for f in parse_frames(plain.wire.data))


@pytest.mark.parametrize("code", [1000, 1001, 1011, 1012, 1013, 4000, 4999])
def test_close_after_message_n_is_what_websockets_reports(code: int) -> None:
    served = serve(
        Session(MESSAGES), fault=f"close:code={code},after_message=2,reason=bye", chunking="bytewise"
    )
    messages, _, client = _read([r.data for r in served.reads])
    assert messages == [m.data for m in MESSAGES[:2]] and served.ending == "close"
    assert client.close_rcvd is not None and (client.close_rcvd.code, client.close_rcvd.reason) == (
        code,
        "bye",
    )


def test_close_1005_is_an_empty_close_frame() -> None:
    served = serve(Session(MESSAGES), fault="close:code=1005,after_message=0")
    _, _, client = _read([r.data for r in served.reads])
    assert (
        client.close_rcvd is not None and client.close_rcvd.code == 1005 and served.wire.data == b"\x88\x00"
    )


@pytest.mark.parametrize("fault", ["drop:after_message=3", "drop:after_byte=40"])
def test_drop_ends_with_no_close_frame_and_websockets_reports_1006(fault: str) -> None:
    served = serve(Session(MESSAGES), fault=fault)
    client = _client()
    for read in served.reads:
        client.receive_data(read.data)
    client.receive_eof()
    assert served.ending == "eof" and client.close_code == 1006
    if "byte" in fault:
        assert sum(len(r.data) for r in served.reads) == 40 < served.wire.message_ends[1]


def test_stall_waits_before_the_message() -> None:
    served = serve(Session(MESSAGES), fault="stall:before_message=2,seconds=30", chunking="coalesced")
    assert [r.wait for r in served.reads] == [0.0, 30.0, 0.0]
    assert json.loads(served.reads[1].data[2:]) == json.loads(TEXTS[1])  # the read starts at message 2


@pytest.mark.parametrize("protocol, status", [("openai.realtime", 429), ("gemini.live", 503), (None, 401)])
def test_handshake_refused_in_the_provider_s_shape(protocol: str | None, status: int) -> None:
    served = serve(Session(MESSAGES, protocol=protocol), fault=f"handshake:status={status},retry_after=2")
    refused = served.refused
    assert refused is not None and refused.status == status and ("retry-after", "2") in refused.headers
    body = json.loads(refused.body)
    assert "error" in body and served.reads == []
    if protocol == "gemini.live":
        assert body["error"]["status"] == "UNAVAILABLE"


def test_the_provider_s_own_error_message() -> None:
    realtime = serve(Session(MESSAGES, protocol="openai.realtime"), fault="error_event:after_message=1")
    messages, _, _ = _read([r.data for r in realtime.reads])
    assert json.loads(messages[1])["type"] == "error" and messages[2:] == [m.data for m in MESSAGES[1:]]
    live = serve(Session(GEMINI, protocol="gemini.live"), fault="error_event:after_message=1")
    frames = parse_frames(live.wire.data)
    assert frames[1].opcode == Opcode.BINARY and json.loads(frames[1].payload) == {
        "goAway": {"timeLeft": "0s"}
    }


def test_a_sequence_faults_one_attempt_each() -> None:
    fault = ws_faults.get("sequence:close:code=1012,after_message=1|as_recorded")
    first, second = (serve(Session(MESSAGES), fault=fault, attempt=n) for n in (0, 1))
    assert first.ending == "close" and second.ending == "recorded"
    assert len(_read([r.data for r in second.reads])[0]) == len(MESSAGES)


@pytest.mark.parametrize(
    "spec, problem",
    [
        ("close:code=1006", "close code 1006 cannot be sent"),
        ("close:code=1005,reason=x", "1005 is an empty close frame"),
        ("drop", "one of after_message=N or after_byte=K"),
        ("drop:after_message=1,after_byte=2", "one of after_message"),
        ("stall:before_message=0", "before_message is a whole number >= 1"),
        ("handshake:status=500", "status is one of 401, 403, 429, 503"),
        ("close:after=1", "close takes code=, after_message=, reason="),
        ("clos:code=1000", "did you mean 'close:code=1000'"),
        ("fragments:1", "unknown WebSocket fault"),
    ],
)
def test_bad_fault_names_say_what_to_write(spec: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ws_faults.get(spec)
    for fault in ws_faults.VARIANTS:
        assert str(ws_faults.get(fault)) == fault


def test_bad_reframing_names() -> None:
    with pytest.raises(ValueError, match="fragments:N with N >= 2"):
        ws_frames.get("fragments:1")
    with pytest.raises(ValueError, match="deflate and no_deflate together"):
        ws_frames.get("deflate+no_deflate")
    with pytest.raises(ValueError, match="did you mean 'pings'"):
        ws_frames.get("ping")


def test_the_docs_websocket_table_covers_every_variant_and_says_what_the_client_meets() -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "docs" / "hooks" / "fault_matrix.py"
    spec = importlib.util.spec_from_file_location("fault_matrix_hook_ws", path)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    table = hook.render_websocket()
    for variant in [
        *ws_chunking.names(),
        *ws_faults.VARIANTS,
        "fragments:3",
        "pings",
        "deflate",
        "no_deflate",
    ]:
        assert f"| `{variant.replace('|', '&#124;')}` |" in table, variant
    rows = {line.split("`")[1]: line for line in table.splitlines()[2:]}
    assert "close 1011" in rows["close:code=1011,after_message=1"]
    assert "close 1006" in rows["drop:after_byte=5"] and "0 of 3 messages" in rows["drop:after_byte=5"]
    assert "HTTP 429 (retry-after 1)" in rows["handshake:status=429,retry_after=1"]
    assert (
        "pings to answer" in rows["pings"] and "60 s of silence" in rows["stall:before_message=2,seconds=60"]
    )
    assert (
        rows["deflate"].count("**refused**: the client offered no permessage-deflate") == 2
    )  # aiohttp, openai

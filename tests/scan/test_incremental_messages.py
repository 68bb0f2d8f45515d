"""A WebSocket session's messages scanned as they arrive: the save takes the findings of the scan
at save, in its order, and scans the messages itself where it would read them otherwise
(issue 48 item 1)."""

from __future__ import annotations

import asyncio
import base64
import json
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
import websockets
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.sync.server import ServerConnection
from ws_servers import running

import ssemock
from ssemock.scan import incremental_messages, walk
from ssemock.scan.incremental_messages import MessageScan, messages_scanned
from ssemock.scan.walk import scan_interaction
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.websocket import Close, Message, WebSocket, Wire

# a fake key, put together at run time (no key-shaped literal in the repository)
KEY = "sk-" + "ant-" + "api03-" + "Zq8Xw2Lm9Rt4Vb7Nc1Pd6Hs3Jk5Fg0Ty"
URL = "ws://127.0.0.1/v1/realtime"


def _delta(text: str) -> str:
    return json.dumps({"type": "response.output_text.delta", "delta": text})


def _audio(data: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(data).decode()})


FORMS: dict[str, Callable[[], list[str | bytes]]] = {
    "whole": lambda: [_delta(f"my key is {KEY}")],
    "split": lambda: [_delta(c) for c in KEY],
    "split plain text": lambda: list(KEY),
    "credential-named member": lambda: [json.dumps({"session": {"api_key": "hunter2-hunter2"}})],
    "base64": lambda: [_audio(f"the key {KEY}".encode())],
    "zlib binary": lambda: [zlib.compress(_delta(f"key {KEY}").encode())],
    # text with NULs is read as UTF-16 by the scan as a body: not by the text messages' short way
    "utf-16 text": lambda: ["".join(c + "\0" for c in f"my key is {KEY}")],
    "none": list,
}


def _session(data: list[str | bytes], sides: list[bool]) -> WebSocket:
    messages = [
        Message("send" if side else "recv", 0.01 * k, "text" if isinstance(d, str) else "binary", d)
        for k, (d, side) in enumerate(zip(data, sides, strict=True))
    ]
    return WebSocket(messages, [], Wire(), Close(1000, "", "client", True, 1.0))


def _interaction(ws: WebSocket, headers: list[tuple[str, str]]) -> Interaction:
    return Interaction(Request("GET", URL, headers), Response(101, [("upgrade", "websocket")]), ws)


def _scanned(ws: WebSocket) -> WebSocket:
    """``ws`` with its messages scanned as a recording scans them as they arrive."""
    scan = MessageScan(URL)
    for m in ws.messages:
        scan.message(m, m.payload)
    messages_scanned(ws, scan)
    return ws


def _watched(fn: Callable[[], list[walk.Finding]]) -> tuple[list[str], int]:
    """``fn``'s findings, and how many messages the scan at save read itself."""
    body, read = walk._Scan.body, []

    def counted(self: walk._Scan, field: str, *args: object, **kwargs: object) -> None:
        read.append(field.startswith("websocket.messages["))
        body(self, field, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(walk._Scan, "body", counted)
        found = fn()
    return [str(f) for f in found], sum(read)


@settings(max_examples=80, deadline=None)
@given(
    form=st.sampled_from(sorted(FORMS)),
    before=st.integers(0, 6),
    after=st.integers(0, 6),
    data=st.data(),
)
def test_the_messages_scanned_as_they_arrive_give_the_save_its_findings(
    form: str, before: int, after: int, data: st.DataObject
) -> None:
    secret = FORMS[form]()
    messages = [_delta(f"w{k}") for k in range(before)] + secret + [_delta(f"v{k}") for k in range(after)]
    side = data.draw(st.booleans())  # a key split across messages is joined within one direction
    filler = data.draw(st.lists(st.booleans(), min_size=before + after, max_size=before + after))
    sides = filler[:before] + [side] * len(secret) + filler[before:]
    whole = [str(f) for f in scan_interaction(_interaction(_session(messages, sides), []))]
    ws = _scanned(_session(messages, sides))
    found, read = _watched(lambda: scan_interaction(_interaction(ws, [])))
    assert found == whole and read == 0
    if form != "none":
        assert whole, f"{form}: not found"


# messages of 1 KB and more, some alike but for their middle (the ends pick what a repeat is compared with)
_PAD = "x" * 1000
REPEATED: list[str | bytes] = [
    _delta(_PAD + "x" * len(KEY) + _PAD),  # clean, as long as the next, the same ends
    _delta(_PAD + KEY + _PAD),
    _delta("The quick brown fox. " * 60),  # clean, nothing worth decoding
    _audio(bytes(2048)),  # silence: a base64 run decoded to binary
    _audio(f"the key {KEY} ".encode() * 40),
    zlib.compress(_delta(f"key {KEY} " + _PAD).encode()) + bytes(1024),  # binary, not inflated
    json.dumps({"session": {"api_key": "hunter2-hunter2", "pad": _PAD}}),
    *[_delta(c) for c in KEY[:8]],  # short pieces of a key, some alike
]


@settings(max_examples=80, deadline=None)
@given(
    picks=st.lists(st.integers(0, len(REPEATED) - 1), max_size=14),
    data=st.data(),
    short_too=st.booleans(),
)
def test_messages_read_again_give_the_save_its_findings(
    picks: list[int], data: st.DataObject, short_too: bool
) -> None:
    """A message equal to an earlier clean one is not read again: the save's findings are the same."""
    messages = [REPEATED[k] for k in picks]
    sides = data.draw(st.lists(st.booleans(), min_size=len(picks), max_size=len(picks)))
    whole = [str(f) for f in scan_interaction(_interaction(_session(messages, sides), []))]
    with pytest.MonkeyPatch.context() as m:
        if short_too:  # every message compared with the clean ones before it, whatever its size
            m.setattr(incremental_messages, "_REPEAT_MIN", 0)
        ws = _scanned(_session(messages, sides))
    found, read = _watched(lambda: scan_interaction(_interaction(ws, [])))
    assert found == whole and read == 0


def test_a_text_message_not_utf8_is_read_as_the_save_reads_it() -> None:
    """A recording hands the scan the bytes received; a text that was not UTF-8 (kept with
    U+FFFD in its place) is read as the save reads it: encoded again, the key at its offset there."""
    received = b'{"type": "response.output_text.delta", "delta": "\xff key ' + KEY.encode() + b'"}'
    messages: list[str | bytes] = [received.decode("utf-8", "replace")]
    whole = [str(f) for f in scan_interaction(_interaction(_session(messages, [False]), []))]
    ws, scan = _session(messages, [False]), MessageScan(URL)
    scan.message(ws.messages[0], received)
    messages_scanned(ws, scan)
    found, read = _watched(lambda: scan_interaction(_interaction(ws, [])))
    assert found == whole and read == 0 and any("offset" in f for f in whole)


def test_a_string_the_handshake_holds_too_has_the_save_scan_the_messages() -> None:
    """The scan at save decodes a base64 run once: one in a header, then in a message, is not
    decoded in the message; the scan as they arrived had no header, so the save reads them itself."""
    run = base64.b64encode(f"the key {KEY}".encode()).decode()
    messages: list[str | bytes] = [_delta("hi"), _audio(f"the key {KEY}".encode())]
    headers = [("x-trace", run)]
    whole = [str(f) for f in scan_interaction(_interaction(_session(messages, [False, True]), headers))]
    ws = _scanned(_session(messages, [False, True]))
    found, read = _watched(lambda: scan_interaction(_interaction(ws, headers)))
    assert found == whole and read == 2
    assert any("request.headers['x-trace']" in f for f in whole)


def test_messages_changed_after_the_scan_are_scanned_at_the_save() -> None:
    ws = _scanned(_session([_delta("hello"), _delta("there")], [False, False]))
    ws.messages[1] = Message("recv", 0.02, "text", _delta(f"my key is {KEY}"))
    found, read = _watched(lambda: scan_interaction(_interaction(ws, [])))
    assert read == 2 and any("websocket.messages[1]" in f for f in found)


def test_a_session_past_the_bytes_kept_is_scanned_at_the_save(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incremental_messages, "_MAX", 200)
    messages: list[str | bytes] = [_delta("x" * 80), _delta("y" * 80), _delta("z" * 80), _delta(f"key {KEY}")]
    ws = _scanned(_session(messages, [False] * 4))
    found, read = _watched(lambda: scan_interaction(_interaction(ws, [])))
    assert read == 4 and any("websocket.messages[3]" in f for f in found)


# -- a recording through the public API -------------------------------------------------------------


def _streaming(text: str) -> Callable[[ServerConnection], None]:
    """Answers the client's hello with ``text`` streamed back one character a message."""

    def handler(ws: ServerConnection) -> None:
        ws.recv()
        for c in text:
            ws.send(_delta(c))
        ws.send(json.dumps({"type": "response.done"}))

    return handler


async def _client(url: str) -> int:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "response.create"}))
        count = 0
        while json.loads(await ws.recv())["type"] != "response.done":
            count += 1
        return count


def test_a_recorded_session_is_saved_without_the_save_reading_its_messages_again(tmp_path: Path) -> None:
    path, text = tmp_path / "rt.json", "a plain answer, streamed " * 4
    body = walk._Scan.body

    def once(self: walk._Scan, field: str, *args: object, **kwargs: object) -> None:
        assert not field.startswith("websocket.messages["), "a message was scanned again"
        body(self, field, *args, **kwargs)  # type: ignore[arg-type]

    with running(_streaming(text)) as server, pytest.MonkeyPatch.context() as m:
        with ssemock.use_cassette(path, record_mode="all"):
            assert asyncio.run(_client(server.url("/v1/realtime"))) == len(text)
            m.setattr(walk._Scan, "body", once)  # only the save is watched
    ws = ssemock.Cassette.load(path).interactions[0].websocket
    assert ws is not None and len(ws.messages) == len(text) + 2


def test_a_recorded_session_whose_key_is_split_across_messages_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rt.json"
    with running(_streaming(KEY)) as server:
        with pytest.raises(ssemock.SecretError) as refused:
            with ssemock.use_cassette(path, record_mode="all"):
                assert asyncio.run(_client(server.url("/v1/realtime"))) == len(KEY)
    assert "reassembled" in str(refused.value) and KEY not in str(refused.value)
    assert not path.exists()
    kept = ssemock.Cassette.load(tmp_path / "rt.refused.json").interactions[0].websocket
    assert kept is not None and len(kept.messages) == len(KEY) + 2  # every message kept, masked
    streamed = "".join(m.json().get("delta", "") for m in kept.messages if m.direction == "recv")
    assert KEY[6:] not in streamed

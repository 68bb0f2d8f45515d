"""``GET /`` on ``ssemock serve`` and ``ssemock proxy``: the cassettes and each interaction's
timeline on one shared time axis (HTTP chunks by arrival time and size, event ends, the gaps, the
time to the first chunk; a WebSocket session's two lanes, its messages' sizes and types, the
close), read back from the DOM and the screenshot of one headless Chromium start."""

from __future__ import annotations

import html
import json
import re
import struct
import zlib
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from chromium import settled_dom

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app
from ssemock.commands.serve.page import render
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus
from ssemock.store.websocket import Close, FrameNote, Message, WebSocket

CHUNK_BLUE = (0x3B, 0x6F, 0xD8)  # a chunk, a received message
SENT_GREEN = (0x2A, 0x9D, 0x3A)
BINARY_PURPLE = (0x8E, 0x44, 0xAD)
CLOSE_RED = (0xC0, 0x39, 0x2B)
SENT_LANE = (0xEE, 0xF7, 0xF0)
RECV_LANE = (0xEE, 0xF3, 0xFC)
PER_SECOND = 780 / 1.6  # the page's 780 px plot over its axis, 0 to 1600 ms
GUTTER = 86


def _text(kind: str, **fields: object) -> Message:
    return Message("send" if kind == "send" else "recv", fields.pop("t"), "text", json.dumps(fields))  # type: ignore[arg-type]


SESSION = [
    _text("recv", t=0.12, type="session.created"),
    _text("send", t=0.2, type="session.update", session={"voice": "alloy"}),
    _text("send", t=0.45, type="response.create"),
    _text("recv", t=0.5, type="response.created"),
    *[_text("recv", t=0.6 + 0.05 * i, type="response.audio.delta", delta="A" * (300 * i)) for i in range(4)],
    Message("send", 1.0, "binary", bytes(range(256)) * 8),
    _text("recv", t=1.3, type="response.done"),  # with the stream's third chunk
]


def cassette(path: Path) -> ssemock.Cassette:
    """A stream of four chunks, a JSON response, and a WebSocket session closed by the client."""
    c = ssemock.Cassette()
    c.add(
        "POST",
        "https://api.example.com/v1/chat/completions",
        [b"data: one\n\ndata: t", b"wo\n\n", b": keep-alive\n\n", b"data: [DONE]\n\n"],
        times=[0.25, 0.3, 1.3, 1.35],
    )
    c.add(
        "GET",
        "https://api.example.com/v1/models",
        [b'{"data": []}'],
        headers={"content-type": "application/json"},
    )
    c.interactions.append(
        ssemock.Interaction(
            ssemock.Request("GET", "wss://api.example.com/v1/realtime?model=gpt-realtime", [], None),
            ssemock.Response(101, [], b""),
            WebSocket(
                messages=list(SESSION),
                frame_map=[FrameNote("recv", 2, "ping", t=0.4, data=b"hi")],  # before response.created
                close=Close(1000, "bye", "client", True, 1.42),
                subprotocol="realtime",
            ),
        )
    )
    c.save(path)
    return c


ZOOM = """(() => {
  window.ssemockZoom(2);
  document.body.dataset.zoomed = JSON.stringify([...document.querySelectorAll('svg.timeline')].map(
    s => [+s.getAttribute('width'), ...[...s.querySelectorAll('rect.chunk, rect.msg')].map(r => +r.getAttribute('x'))]));
  window.ssemockZoom(1);
})()"""


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The page's DOM after its script zoomed to 2x and back (the zoomed figures kept in
    ``data-zoomed``), and its screenshot at 1000x700: one Chromium start."""
    tmp = tmp_path_factory.mktemp("timeline")
    path, shot = tmp / "chat.json", tmp / "page.png"
    cassette(path)
    with running(app(path)) as url:
        dom = settled_dom(url + "/", tmp / "profile", ZOOM, screenshot=shot, size=(1000, 700))
    return dom, shot


def _attrs(tag: str) -> dict[str, str]:
    return {k: html.unescape(v) for k, v in re.findall(r'([a-z][a-z0-9-]*)="([^"]*)"', tag)}


def _sections(dom: str) -> list[str]:
    return re.findall(r"<section .*?</section>", dom, flags=re.S)


def test_the_page_lists_each_interaction_with_its_timeline(page: tuple[str, Path]) -> None:
    dom, _ = page
    sections = re.findall(r'<section class="interaction" ([^>]*)>', dom)
    assert len(sections) == 2, dom[:2000]
    assert _attrs(sections[0]) == {
        "data-cassette": "chat.json",
        "data-index": "0",
        "data-chunks": "4",
        "data-events": "4",  # where each block of the framing ends (the keep-alive comment too)
        "data-ttfc": "0.2500",
        "data-longest-gap": "1.0000",
        "data-complete": "true",
    }
    chunks = [_attrs(t) for t in re.findall(r"<rect [^>]*class=\"chunk\"[^>]*>", dom)]
    assert [(c["data-t"], c["data-size"]) for c in chunks[:4]] == [
        ("0.2500", "18"),
        ("0.3000", "4"),
        ("1.3000", "14"),
        ("1.3500", "14"),
    ]
    assert "longest gap 1.00 s (after chunk 1)" in dom and "first chunk at 250.0 ms" in dom
    assert '<h2 class="cassette">chat.json' in dom
    table = re.findall(
        r"<tr><td>(\d+)</td><td>([^<]*)</td><td>([^<]*)</td><td>(\d+)</td><td>(\d+)</td></tr>", dom
    )
    assert table[:4] == [
        ("0", "250.0 ms", "", "18", "1"),
        ("1", "300.0 ms", "50.0 ms", "4", "1"),
        ("2", "1.30 s", "1.00 s", "14", "1"),
        ("3", "1.35 s", "50.0 ms", "14", "1"),
    ]


def test_every_row_shares_one_time_axis_with_ticks(page: tuple[str, Path]) -> None:
    dom, _ = page
    rows = re.findall(r"<svg [^>]*class=\"timeline\".*?</svg>", dom, flags=re.S)
    assert len(rows) == 3
    ticks = [
        re.findall(r'<text data-t="([^"]*)" x="([^"]*)" class="tick"[^>]*>([^<]*)</text>', r) for r in rows
    ]
    labels = [label for _, _, label in ticks[0]]
    assert labels == [f"{ms} ms" for ms in range(0, 1601, 200)]
    assert ticks[0] == ticks[1] == ticks[2]  # the same times at the same x in every row
    for t, x, _ in ticks[0]:
        assert float(x) == pytest.approx(GUTTER + float(t) * PER_SECOND, abs=0.1)
    assert "every row shares one scale: 0 to 1600 ms, a tick every 200 ms" in dom
    # the stream's chunk at 1.3 s and the session's message at 1.3 s stand at one x
    third = _attrs(re.findall(r"<rect [^>]*class=\"chunk\"[^>]*>", dom)[2])
    done = _attrs(re.findall(r"<rect [^>]*class=\"msg recv[^>]*>", dom)[-1])
    assert third["data-t"] == done["data-t"] == "1.3000" and float(third["x"]) == pytest.approx(
        float(done["x"])
    )
    # the zoom redraws every row at one scale: twice as wide, the same times twice as far from 0
    zoomed = json.loads(html.unescape(re.search(r'data-zoomed="([^"]*)"', dom)[1]))  # type: ignore[index]
    assert [z[0] for z in zoomed] == [GUTTER + 2 * 780 + 24] * 3
    assert zoomed[0][3] == pytest.approx(GUTTER + 2 * 1.3 * PER_SECOND - 1.5)
    assert zoomed[2][-1] == zoomed[0][3]


def test_a_websocket_session_is_two_lanes_with_sizes_types_and_the_close(page: tuple[str, Path]) -> None:
    dom, _ = page
    section = next(s for s in _sections(dom) if 'class="interaction websocket"' in s)
    marks = [_attrs(t) for t in re.findall(r'<rect [^>]*class="msg [^>]*>', section)]
    got = [(m["class"].split()[1], m["data-type"], int(m["data-size"]), m["data-what"]) for m in marks]
    assert got == [
        (
            "recv" if m.direction == "recv" else "sent",
            m.type,
            len(m.payload),
            (m.json() or {}).get("type", ""),
        )
        for m in SESSION
    ]
    middle = 66.0  # sent bars stand on the lanes' middle line, received ones hang from it
    for m in marks:
        top, height = float(m["y"]), float(m["height"])
        assert (top + height == pytest.approx(middle)) if "sent" in m["class"] else top == middle
    heights = [float(m["height"]) for m in marks]
    assert heights[4] < heights[5] < heights[6] < heights[7] < heights[8]  # taller for bigger
    assert ">sent ↑</text>" in section and ">received ↓</text>" in section
    labels = [
        (_attrs(a), text) for a, text in re.findall(r'<text ([^>]*class="what"[^>]*)>([^<]*)</text>', section)
    ]
    shown = [text for a, text in labels if a["visibility"] == "visible"]  # where the page's script put them
    assert shown == [
        "session.created",
        "session.update",
        "response.create",
        "response.created",
        "response.audio.delta",  # a run named once
        "response.done",
    ]
    assert len(labels) == len(SESSION) - 1  # the binary message has no JSON type
    assert "<title>sent #2 at 1.00 s: binary, 2048 bytes</title>" in section
    [ping] = [_attrs(t) for t in re.findall(r'<rect [^>]*class="control recv"[^>]*>', section)]
    assert ping["data-kind"] == "ping" and ping["data-t"] == "0.4000" and float(ping["y"]) == middle
    assert "<title>recv ping at 400.0 ms, 2 bytes</title>" in section and "7 received, 1 ping/pong" in section
    [close] = [_attrs(t) for t in re.findall(r'<line [^>]*class="close"[^>]*>', section)]
    assert close["data-code"] == "1000" and close["data-t"] == "1.4200"
    assert float(close["x1"]) == pytest.approx(GUTTER + 1.42 * PER_SECOND)
    assert "close 1000 'bye' by the client, clean" in section
    rows = re.findall(r'<tr class="(sent|recv|close)">(.*?)</tr>', section)
    cells = [(kind, re.findall(r"<td[^>]*>([^<]*)</td>", row)) for kind, row in rows]
    assert cells[1] == (
        "sent",
        ["0", "200.0 ms", "→ sent", "text", str(len(SESSION[1].payload)), "session.update"],
    )
    assert cells[8] == ("sent", ["2", "1.00 s", "→ sent", "binary", "2048", ""])
    assert cells[-1] == ("close", ["", "1.42 s", "close 1000 'bye' by the client, clean"])
    assert len(cells) == len(SESSION) + 1


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        data = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", data[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, rows, prev = zlib.decompress(idat), [], bytearray(width * bpp)
    stride = width * bpp
    for y in range(height):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        kind, row = line[0], bytearray(line[1:])
        if kind in (0, 2) and not any(row):  # the row above again (most of a page): no loop
            row = bytearray(prev) if kind == 2 else row
            rows.append(bytes(row))
            prev = row
            continue
        for i in range(stride):
            left = row[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                row[i] = (row[i] + left) & 255
            elif kind == 2:
                row[i] = (row[i] + up) & 255
            elif kind == 3:
                row[i] = (row[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[i] = (row[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(row))
        prev = row
    return width, bpp, rows


def _colored(rows: list[bytes], width: int, bpp: int, color: tuple[int, int, int]) -> set[tuple[int, int]]:
    """The pixels of exactly ``color``."""
    want, found = bytes(color), set()
    for y, row in enumerate(rows):
        at = row.find(want)
        while at >= 0:
            if at % bpp == 0:
                found.add((at // bpp, y))
            at = row.find(want, at + 1)
    return found


def test_the_screenshot_shows_the_axis_the_lanes_and_the_close(page: tuple[str, Path]) -> None:
    """Pixel facts of the picture: the stream's bars, the session's sent lane above its received
    lane with green bars in the one and blue in the other, the binary message, the close across
    both lanes, and the stream's chunk and the message at 1.3 s in one column."""
    _, shot = page
    width, bpp, rows = _pixels(shot.read_bytes())
    sent_lane = {y for _, y in _colored(rows, width, bpp, SENT_LANE)}
    tinted = sorted({y for _, y in _colored(rows, width, bpp, RECV_LANE)})  # what came from the server
    bands = [range(a, b + 1) for a, b in _runs(tinted)]
    assert sent_lane and len(bands) == 3, bands  # the stream, the JSON response, the session
    stream, _, received = bands
    assert stream[-1] < min(sent_lane) and 0 < received[0] - max(sent_lane) <= 3  # sent above received
    green, blue, purple, red = (  # in the rows, not the legend above them
        {(x, y) for x, y in _colored(rows, width, bpp, c) if y >= stream[0] - 8}
        for c in (SENT_GREEN, CHUNK_BLUE, BINARY_PURPLE, CLOSE_RED)
    )
    assert len({x for x, y in green if y in sent_lane}) >= 4  # two sent text messages, 3 px each
    assert purple and min(sent_lane) <= min(y for _, y in purple) <= max(y for _, y in purple) < received[0]
    chunks = {x for x, y in blue if y in stream}
    messages = {x for x, y in blue if y in received}
    assert len(chunks) >= 8 and len(messages) >= 14
    both = sorted(chunks & messages)  # 1.3 s: one column in both rows, nothing else shared
    assert both and both[-1] - both[0] <= 3, both
    lanes = set(range(min(sent_lane), received[-1] + 1))
    close = [x for x in {x for x, _ in red} if {y for xx, y in red if xx == x} >= lanes]
    assert close and abs(close[0] - both[0] - (1.42 - 1.3) * PER_SECOND) <= 3, (close, both)


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """The runs of consecutive integers in sorted ``values``, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    return runs


def test_everything_shown_is_escaped_and_masked() -> None:
    """Markup in a URL, a content type, a message's JSON type, a close reason or a subprotocol
    is shown as text; a key in them never shows."""
    key = "sk-proj-" + "Q7rT2mV9xK4bN8cW1zL5hJ3fD6gS0aP2eR7tY9uI4oA1sD"
    evil = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    c = ssemock.Cassette()
    c.add("GET", f"https://api.example.com/{evil}", [b"data: a\n\n"], headers={"content-type": evil})
    session = WebSocket(
        messages=[Message("recv", 0.1, "text", json.dumps({"type": evil + key}))],
        close=Close(4000, evil + key, "server", False, 0.2),
        subprotocol="x" + evil,
    )
    c.interactions.append(
        ssemock.Interaction(
            ssemock.Request("GET", f"wss://api.example.com/{evil}", [], None),
            ssemock.Response(101, [], b""),
            session,
        )
    )
    text = render([c])
    assert "<img" not in text and "<script>alert" not in text and "onerror=alert(1)>" not in text
    assert text.count("<script>") == 1  # the page's own
    assert key not in text and key[:12] not in text
    with_password = replace(
        c.interactions[1], request=ssemock.Request("GET", "wss://u:Zq7xWv9Lp2Rt8YmK4@h/", [], None)
    )
    assert "Zq7xWv9Lp2Rt8YmK4" not in render([ssemock.Cassette([with_password])])


def test_the_proxy_answers_a_browser_at_root_and_relays_the_rest(server: str, tmp_path: Path) -> None:
    cassette(tmp_path / "chat.json")
    with running(proxy_app(server, cassette_dir=tmp_path)) as url:
        page = httpx.get(url + "/", headers={"accept": "text/html"}, timeout=10)
        also = httpx.get(url + "/_ssemock/", timeout=10)
        relayed = httpx.get(url + "/echo", timeout=10)
    assert page.status_code == 200 and "chat.json" in page.text and 'data-chunks="4"' in page.text
    assert also.text == page.text
    assert relayed.json()["headers"]["host"] == server.removeprefix("http://")


def test_a_long_session_without_a_close_frame_has_second_ticks_and_a_dashed_close() -> None:
    """Past 2 s the axis counts seconds; a session that ended with no close frame (1006) is
    closed by a dashed line at its last message, and says so."""
    c = ssemock.Cassette()
    c.add("GET", "https://api.example.com/v1/s", [b"data: a\n\n"], times=[0.5])
    c.interactions.append(
        ssemock.Interaction(
            ssemock.Request("GET", "wss://api.example.com/v1/realtime", [], None),
            ssemock.Response(101, [], b""),
            WebSocket(messages=[_text("send", t=1.0, type="a"), _text("recv", t=7.3, type="b")]),
        )
    )
    text = render([c])
    rows = re.findall(r'<svg [^>]*class="timeline".*?</svg>', text, flags=re.S)
    for row in rows:
        assert re.findall(r'class="tick"[^>]*>([^<]*)<', row) == [f"{s} s" for s in range(9)]
    [close] = [_attrs(t) for t in re.findall(r'<line [^>]*class="close none"[^>]*>', rows[1])]
    assert close["data-code"] == "1006" and close["data-t"] == "7.3000"
    assert "no close frame (1006)" in rows[1]


def _grpc_cassette(details: str) -> ssemock.Cassette:
    """A server-streaming gRPC call: one request, three responses, a failed status."""
    call = GrpcCall(
        "/test.Chat/Count",
        "unary_stream",
        [
            GrpcMessage("send", 0.0, b"3"),
            *(GrpcMessage("recv", 0.1 * (k + 1), b"n:%d" % k) for k in range(3)),
        ],
        status=GrpcStatus("RESOURCE_EXHAUSTED", details, 0.45),
    )
    request = ssemock.Request("POST", "http://127.0.0.1:50051/test.Chat/Count", [], None)
    return ssemock.Cassette([ssemock.Interaction(request, ssemock.Response(200, [], b""), grpc=call)])


def test_a_grpc_call_is_two_lanes_with_its_method_messages_and_status() -> None:
    """A gRPC call's section names its method path, puts each message on its side of the shared
    axis at its time, and marks the status where it arrived; a key in the details never shows."""
    key = "sk-proj-" + "Q7rT2mV9xK4bN8cW1zL5hJ3fD6gS0aP2eR7tY9uI4oA1sD"
    text = render([_grpc_cassette(f"<b>slow</b> down {key}")])
    (section,) = [s for s in _sections(text) if 'class="interaction grpc"' in s]
    head = _attrs(section.split(">", 1)[0])
    assert (head["data-method"], head["data-kind"]) == ("/test.Chat/Count", "unary_stream")
    assert (head["data-sent"], head["data-received"], head["data-status"]) == ("1", "3", "RESOURCE_EXHAUSTED")
    sent = [_attrs(t) for t in re.findall(r"<rect [^>]*class=\"msg sent[^>]*>", section)]
    received = [_attrs(t) for t in re.findall(r"<rect [^>]*class=\"msg recv[^>]*>", section)]
    assert [m["data-t"] for m in sent] == ["0.0000"]
    assert [m["data-t"] for m in received] == ["0.1000", "0.2000", "0.3000"]
    assert [m["data-size"] for m in received] == ["3", "3", "3"]
    (status,) = [_attrs(t) for t in re.findall(r"<line [^>]*class=\"close status[^>]*>", section)]
    assert (status["data-code"], status["data-t"]) == ("RESOURCE_EXHAUSTED", "0.4500")
    assert "/test.Chat/Count" in section.split("</div>", 1)[0]
    assert "<b>slow" not in text and "&lt;b&gt;slow" in text
    assert key not in text and key[:12] not in text

"""``GET /`` on ``ssemock serve`` and ``ssemock proxy``: the cassettes and each interaction's
timeline (chunks by arrival time and size, event ends, the gaps, the time to the first chunk),
read back from the DOM a headless Chromium built and from its screenshot."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import zlib
from pathlib import Path

import httpx
import pytest
from test_serve import CHROMIUM, _dump_dom

import ssemock
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.commands.serve import app

CHUNK_BLUE = (0x3B, 0x6F, 0xD8)


def cassette(path: Path) -> ssemock.Cassette:
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
    c.save(path)
    return c


def test_the_page_lists_each_interaction_with_its_timeline(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    cassette(path)
    with running(app(path)) as url:
        dom = _dump_dom(url + "/", tmp_path / "profile")
    sections = re.findall(r'<section class="interaction" ([^>]*)>', dom)
    assert len(sections) == 2, dom[:2000]
    first = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', sections[0]))
    assert first == {
        "cassette": "chat.json",
        "index": "0",
        "chunks": "4",
        "events": "4",  # where each block of the framing ends (the keep-alive comment too)
        "ttfc": "0.2500",
        "longest-gap": "1.0000",
        "complete": "true",
    }
    chunks = re.findall(r'<rect class="chunk" data-t="([^"]*)" data-size="(\d+)"', dom)
    assert chunks[:4] == [("0.2500", "18"), ("0.3000", "4"), ("1.3000", "14"), ("1.3500", "14")]
    assert "longest gap 1.00 s (after chunk 1)" in dom and "first chunk at 250.0 ms" in dom
    assert '<h2 class="cassette">chat.json' in dom


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


def test_the_page_draws_the_chunks_in_a_screenshot(tmp_path: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing")  # _dump_dom (the test above) fails in CI then
    path = tmp_path / "chat.json"
    cassette(path)
    shot = tmp_path / "page.png"
    with running(app(path)) as url:
        proc = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={tmp_path / 'profile'}",
                "--window-size=800,400",
                f"--screenshot={shot}",
                url + "/",
            ],
            capture_output=True,
            timeout=45,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    width, bpp, rows = _pixels(shot.read_bytes())
    blue = [
        (x, y)
        for y, row in enumerate(rows)
        for x in range(width)
        if tuple(row[x * bpp : x * bpp + 3]) == CHUNK_BLUE
    ]
    assert blue, "no chunk bar drawn"
    columns = sorted({x for x, _ in blue})
    # four chunks of the first interaction (two close pairs) and one of the second: distinct bars
    bars = [c for i, c in enumerate(columns) if i == 0 or c - columns[i - 1] > 1]
    assert len(bars) >= 4


def test_the_proxy_answers_a_browser_at_root_and_relays_the_rest(server: str, tmp_path: Path) -> None:
    cassette(tmp_path / "chat.json")
    with running(proxy_app(server, cassette_dir=tmp_path)) as url:
        page = httpx.get(url + "/", headers={"accept": "text/html"}, timeout=10)
        also = httpx.get(url + "/_ssemock/", timeout=10)
        relayed = httpx.get(url + "/echo", timeout=10)
    assert page.status_code == 200 and "chat.json" in page.text and 'data-chunks="4"' in page.text
    assert also.text == page.text
    assert relayed.json()["headers"]["host"] == server.removeprefix("http://")

"""The mitmproxy addon (``mitmdump -s ssemock/commands/mitmproxy_addon.py``), run from its side
environment (``bash .ci/mitmproxy-env``; ``SSEMOCK_MITMDUMP`` names its mitmdump): forward
mode, a client given the proxy records into a cassette chunk by chunk, and gets each chunk
before the upstream sends the next."""

from __future__ import annotations

import gzip
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import needs
from conftest import ACK, GATED
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route
from waiting import accepts, until

import ssemock
import ssemock.commands.mitmproxy_addon as addon
from ssemock.commands.loopback import running

ROOT = Path(__file__).resolve().parents[1]


def _mitmdump_path() -> str:
    found = os.environ.get("SSEMOCK_MITMDUMP") or str(ROOT / ".venv-mitmproxy" / "bin" / "mitmdump")
    if not os.path.exists(found):
        needs.missing(
            f"{found} is missing: build the side environment with bash .ci/mitmproxy-env (.ci/run does)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _mitmdump(tmp_path: Path, *options: str) -> Iterator[tuple[int, list[str]]]:
    """mitmdump on loopback with the addon and ``options`` (``--set`` pairs): its port, and
    (once the block ends) what it printed."""
    mitmdump, port = _mitmdump_path(), _free_port()
    proc = subprocess.Popen(
        [
            mitmdump,
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
            "--set",
            f"confdir={tmp_path / 'mitmproxy'}",
            "-s",
            addon.__file__,
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed: list[str] = []
    try:
        up = until(lambda: accepts(port) or proc.poll() is not None, "mitmdump's start")
        assert up and proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        yield port, printed
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        printed.extend((proc.stdout.read() if proc.stdout else "").splitlines())


def test_forward_mode_records_each_chunk_as_it_arrives(server: str, tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "app.json"
    with _mitmdump(tmp_path, "--set", f"ssemock_cassette={path}") as (port, _):
        with httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=10, trust_env=False) as client:
            reads = []
            with client.stream("POST", server + "/gated", json={"stream": True}) as resp:
                for data in resp.iter_raw():
                    reads.append(data)
                    ACK.release()  # the upstream sends chunk k+1 only now
            with client.stream("GET", server + "/gzip", headers={"accept-encoding": "gzip"}) as resp:
                raw = b"".join(resp.iter_raw())
            for coding in ("br", "zstd"):  # (mitmproxy's Brotli 1.1: inflated a byte at a time)
                client.get(server + f"/{coding}", headers={"accept-encoding": coding})
        until(
            lambda: path.exists() and len(ssemock.Cassette.load(path).interactions) >= 4,
            "the addon's save of the four interactions",
            every=0.05,
        )
    assert reads == GATED  # no "data: late": mitmproxy held nothing back
    assert gzip.decompress(raw) == b"data: one\n\ndata: two\n\n"  # forwarded as the client asked
    gated, gzipped, *others = ssemock.Cassette.load(path).interactions
    assert gated.response.chunks == GATED and gated.response.complete
    assert gated.response.times == sorted(gated.response.times)
    assert gated.request.url == server + "/gated"
    assert gzipped.response.body == b"data: one\n\ndata: two\n\n"  # recorded decoded
    assert gzipped.response.header("content-encoding") is None
    for other in others:
        assert other.response.body == "data: one\n\ndata: 世界\n\n".encode()
        assert other.response.header("content-encoding") is None


BOMB = gzip.compress(b"data: " + b"0" * (32 << 20) + b"\n\n", 1)  # 32 MiB inflated, ~100 KiB sent


async def _bomb(request: Request) -> StreamingResponse:
    pieces = [BOMB[at : at + (1 << 14)] for at in range(0, len(BOMB), 1 << 14)]
    return StreamingResponse(
        iter(pieces), media_type="text/event-stream", headers={"content-encoding": "gzip"}
    )


def test_what_the_addon_inflates_is_capped_and_its_log_line_masks_the_url(tmp_path: Path) -> None:
    """A gzip bomb: the client gets every byte, the recording stops at ssemock_max_body_bytes
    decoded bytes, marked incomplete as a recording cut at max_body_bytes is; the log line
    masks ``?sig=`` as the proxy's lines do."""
    path = tmp_path / "cassettes" / "app.json"
    secret = "s3cr3tSigNoKnownShape42"
    limit = 1 << 20
    options = ("--set", f"ssemock_cassette={path}", "--set", f"ssemock_max_body_bytes={limit}")
    with (
        running(Starlette(routes=[Route("/v1/bomb", _bomb)])) as up,
        _mitmdump(tmp_path, *options) as (
            port,
            printed,
        ),
    ):
        with httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=10, trust_env=False) as client:
            with client.stream("GET", f"{up}/v1/bomb?sig={secret}") as resp:
                raw = b"".join(resp.iter_raw())
        until(path.exists, "the addon's save", every=0.05)
    assert raw == BOMB  # the client got it all, as sent
    response = ssemock.Cassette.load(path).interactions[0].response
    assert not response.complete and response.error is not None
    assert response.error["type"] == "RecordingTruncated" and response.error["at_byte"] == limit
    assert response.body == b"data: " + b"0" * (limit - 6) and response.header("content-encoding") is None
    saved = [line for line in printed if "saved into" in line]
    assert len(saved) == 1 and "sig=REDACTED" in saved[0] and "incomplete: RecordingTruncated" in saved[0]
    # not even a piece of it (mitmdump's own flow line, on by default, shows the URL cut short)
    assert not any(secret[:6] in line for line in printed), printed

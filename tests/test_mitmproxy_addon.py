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
from pathlib import Path

import httpx
import pytest
from conftest import ACK, GATED
from waiting import accepts, until

import ssemock
import ssemock.commands.mitmproxy_addon as addon

ROOT = Path(__file__).resolve().parents[1]


def _mitmdump() -> str:
    found = os.environ.get("SSEMOCK_MITMDUMP") or str(ROOT / ".venv-mitmproxy" / "bin" / "mitmdump")
    if not os.path.exists(found):
        missing = f"{found} is missing: build the side environment with bash .ci/mitmproxy-env (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_forward_mode_records_each_chunk_as_it_arrives(server: str, tmp_path: Path) -> None:
    mitmdump, port = _mitmdump(), _free_port()
    path = tmp_path / "cassettes" / "app.json"
    proc = subprocess.Popen(
        [
            mitmdump,
            "-q",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
            "--set",
            f"confdir={tmp_path / 'mitmproxy'}",
            "-s",
            addon.__file__,
            "--set",
            f"ssemock_cassette={path}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        up = until(lambda: accepts(port) or proc.poll() is not None, "mitmdump's start")
        assert up and proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        with httpx.Client(proxy=f"http://127.0.0.1:{port}", timeout=10, trust_env=False) as client:
            reads = []
            with client.stream("POST", server + "/gated", json={"stream": True}) as resp:
                for data in resp.iter_raw():
                    reads.append(data)
                    ACK.release()  # the upstream sends chunk k+1 only now
            with client.stream("GET", server + "/gzip", headers={"accept-encoding": "gzip"}) as resp:
                raw = b"".join(resp.iter_raw())
        until(
            lambda: path.exists() and len(ssemock.Cassette.load(path).interactions) >= 2,
            "the addon's save of both interactions",
            every=0.05,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert reads == GATED  # no "data: late": mitmproxy held nothing back
    assert gzip.decompress(raw) == b"data: one\n\ndata: two\n\n"  # forwarded as the client asked
    gated, gzipped = ssemock.Cassette.load(path).interactions
    assert gated.response.chunks == GATED and gated.response.complete
    assert gated.response.times == sorted(gated.response.times)
    assert gated.request.url == server + "/gated"
    assert gzipped.response.body == b"data: one\n\ndata: two\n\n"  # recorded decoded
    assert gzipped.response.header("content-encoding") is None

"""Real clients record through ``ssemock proxy`` and replay through ``ssemock serve`` under every
chunking: the ``openai`` and ``@anthropic-ai/sdk`` Node SDKs and the ``eventsource`` package
(installed by .ci/run from tests/node/package-lock.json: ``npm ci --prefix tests/node``), curl,
and a headless Chromium's EventSource. The upstream is a loopback stand-in speaking each
provider's shape (tests/streams.py: writes cut mid-line, as real servers send them). Each
client's result must match the reference decoding of the cassette it recorded
(`ssemock.accumulate`). A hand-written Node decoder (``chunk.split("\\n")`` per read) runs the
same matrix: the test prints where it breaks (docs/guide/proxy.md shows a run).

Node runs twice (recording, then the whole replay matrix in one process) and Chromium twice."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import needs
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, StreamingResponse
from starlette.routing import Route
from streams import anthropic_events, openai_chat_events, writes
from test_serve import _dump_dom
from waiting import until

import ssemock
from ssemock import sse
from ssemock.accumulate import accumulate
from ssemock.commands import serve
from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app

NODE_DIR = Path(__file__).parent / "node"
MATRIX_PAGE = Path(__file__).parent / "browser" / "matrix.html"
CHUNKINGS = [
    "as_recorded",
    "bytewise",
    "mid_line",
    "mid_utf8",
    "coalesced",
    "per_event",
    "fixed:7",
    "random:3",
]
TIMEOUT = 60.0
CURL = shutil.which("curl") or "/usr/bin/curl"


def run_node(runs: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Run the Node clients (tests/node/clients.mjs) once for all ``runs``; results by label."""
    proc = subprocess.run(
        [needs.node(), str(NODE_DIR / "clients.mjs"), json.dumps(runs)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        cwd=NODE_DIR,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["label"]: r for r in json.loads(proc.stdout)}


def _stream(events: list[bytes]) -> Any:
    async def endpoint(request: Request) -> StreamingResponse:
        await request.body()

        async def body() -> AsyncIterator[bytes]:
            for data in writes(events):
                yield data

        return StreamingResponse(
            body(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    return endpoint


async def _page(request: Request) -> HTMLResponse:
    return HTMLResponse(MATRIX_PAGE.read_text(encoding="utf-8"))


STAND_IN = Starlette(
    routes=[
        Route("/v1/chat/completions", _stream(openai_chat_events()), methods=["POST"]),
        Route("/v1/messages", _stream(anthropic_events()), methods=["POST"]),
        Route("/v1/stream", _stream(openai_chat_events()), methods=["GET"]),
        Route("/matrix.html", _page),
    ]
)


def reference(cassette: ssemock.Cassette) -> dict[str, str]:
    """What the cassette's stream means (ssemock's reference decoder and accumulator)."""
    x = cassette.interactions[0]
    done = accumulate(
        sse.decode([x.response.body]), url=x.request.url, content_type=x.response.header("content-type")
    )
    args = "".join(call.arguments for call in done.tool_calls)
    return {"text": done.text, "tool_args": args}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every client records through the proxy once (one cassette each): the folder and the live results."""
    folder = tmp_path_factory.mktemp("proxy-clients")
    with running(STAND_IN) as up, running(proxy_app(up, cassette_dir=folder)) as proxy:
        live = run_node(
            [
                {"client": c, "base": f"{proxy}/_ssemock/{c}", "label": c}
                for c in ("openai", "anthropic", "eventsource")
            ]
        )
        curl = subprocess.run(
            [CURL, "-sS", "-N", "--max-time", "10", "-H", "x-ssemock-cassette: curl", f"{proxy}/v1/stream"],
            capture_output=True,
            timeout=TIMEOUT,
        )
        assert curl.returncode == 0, curl.stderr
        live["curl"] = {"body": curl.stdout}
        page = f"{proxy}/_ssemock/page/matrix.html?src=/_ssemock/browser/v1/stream"
        live["browser"] = _browser(page, folder / "profile-record")
        # the saves end after each client's last byte: wait for all of them
        for name in ("openai", "anthropic", "eventsource", "curl", "browser"):
            _wait_for(folder / f"{name}.json")
    yield folder, live


def _wait_for(path: Path) -> None:
    until(path.exists, f"{path}'s save")


def _browser(url: str, profile: Path) -> dict[str, list[str]]:
    """The page's lists (data per source) once every source is done."""
    dom = _dump_dom(url, profile)
    status = re.search(r'<p id="status">([^<]*)</p>', dom)
    assert status and status.group(1) == "done", dom[-3000:]
    lists = re.findall(r'<ol data-src="([^"]*)">(.*?)</ol>', dom, re.S)
    return {
        html.unescape(src): [html.unescape(t) for t in re.findall(r"<li>([^<]*)</li>", items)]
        for src, items in lists
    }


def _events_text(datas: list[str]) -> str:
    return "".join(json.loads(d)["choices"][0]["delta"].get("content") or "" for d in datas)


def test_every_client_records_what_the_reference_decodes(recorded: tuple[Path, dict[str, Any]]) -> None:
    folder, live = recorded
    for client in ("openai", "anthropic"):
        cassette = ssemock.Cassette.load(folder / f"{client}.json")
        assert cassette.interactions[0].response.complete
        assert len(cassette.interactions[0].response.chunks) > 1  # the stand-in's writes, kept
        want = reference(cassette)
        assert want["text"] and want["tool_args"]
        assert {k: live[client][k] for k in ("text", "tool_args")} == want, client
    for client in ("eventsource", "curl", "browser"):
        cassette = ssemock.Cassette.load(folder / f"{client}.json")
        assert cassette.interactions[0].request.method == "GET"
        assert cassette.interactions[0].request.url.endswith("/v1/stream")
        want_text = reference(cassette)["text"]
        if client == "eventsource":
            assert live[client]["text"] == want_text
        elif client == "curl":
            assert live[client]["body"] == cassette.interactions[0].response.body
        else:
            (datas,) = live[client].values()  # its one source
            assert _events_text(datas) == want_text, live[client]
    # every client named its cassette; only the browser's own favicon request went to the default
    others = ssemock.Cassette.load(folder / "proxy.json").interactions
    assert [x.request.url.rsplit("/", 1)[-1] for x in others] == ["favicon.ico"]


def test_every_client_replays_under_every_chunking_and_the_naive_decoder_breaks(
    recorded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    folder, _ = recorded
    paths = [folder / f"{n}.json" for n in ("openai", "anthropic", "eventsource")]
    want = {
        n: reference(ssemock.Cassette.load(folder / f"{n}.json"))
        for n in ("openai", "anthropic", "eventsource")
    }
    with ExitStack() as stack:
        bases = {c: stack.enter_context(running(serve.app(paths, chunking=c, cors="*"))) for c in CHUNKINGS}
        runs = [
            {"client": client, "base": base, "label": f"{client} {chunking}"}
            for chunking, base in bases.items()
            for client in ("openai", "anthropic", "eventsource", "naive")
        ]
        results = run_node(runs)
        body = ssemock.Cassette.load(folder / "curl.json").interactions[0].response.body
        for chunking, base in bases.items():
            curl = subprocess.run(
                [CURL, "-sS", "-N", "--max-time", "10", f"{base}/v1/stream"],
                capture_output=True,
                timeout=TIMEOUT,
            )
            assert curl.stdout == body, chunking
        page = stack.enter_context(running(STAND_IN))
        sources = "&".join(f"src={base}/v1/stream" for base in bases.values())
        browser = _browser(f"{page}/matrix.html?{sources}", tmp_path / "profile")
    for chunking in CHUNKINGS:
        for client in ("openai", "anthropic"):
            got = results[f"{client} {chunking}"]
            assert {k: got.get(k) for k in ("text", "tool_args")} == want[client], (client, chunking, got)
        assert results[f"eventsource {chunking}"]["text"] == want["eventsource"]["text"], chunking
        datas = browser.get(f"{bases[chunking]}/v1/stream")
        assert datas is not None, (chunking, bases, {k: len(v) for k, v in browser.items()})
        assert _events_text(datas) == want["eventsource"]["text"], chunking
    naive = {c: results[f"naive {c}"] for c in CHUNKINGS}
    right = want["openai"]["text"]
    # whole events in every chunk: the naive decoder is right, however the reads merge them
    for chunking in ("per_event", "coalesced"):
        assert (naive[chunking]["text"], naive[chunking]["errors"]) == (right, 0), naive[chunking]
    # chunks cut inside a line or a character: it is wrong wherever a read ends there; over a
    # real socket, reads may merge chunks (uvicorn writes them at once), so which cells break
    # varies from run to run: printed (-s), shown in docs/guide/proxy.md, not asserted
    print()
    for chunking, got in naive.items():
        verdict = "right" if got["text"] == right and not got["errors"] else "WRONG"
        print(f"naive {chunking:12} {verdict:5} {got['errors']} JSON error(s), text {got['text']!r}")

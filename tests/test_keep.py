"""Nothing lost to a refusal or an interruption (ssemock.redaction.keep).

A recording refused for a secret is kept beside the cassette as ``<name>.refused.json`` with
every secret masked, and ``ssemock accept`` makes it the cassette (no second paid call). A
recording cut short by anything but a normal test outcome (Ctrl-C, SIGTERM, SystemExit, a
cancelled task, pytest-timeout in signal and thread mode) leaves the good cassette byte for
byte, and its ``<name>.partial.json`` is scanned and masked like any save. The interruptions run
in child processes against a loopback server whose endless stream carries a key.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock.commands.cli import main
from ssemock.commands.loopback import running
from ssemock.core.modes import RecordMode
from ssemock.redaction.rules import find_secrets

KEY = "sk-proj-test" + "Q1w2E3r4T5y6U7i8O9p0" * 3  # fake, of the shape the scan refuses


async def _leaky(request: Request) -> StreamingResponse:
    """An SSE stream whose second event holds ``KEY``; ``n`` events then [DONE], or endless."""
    n = int(request.query_params.get("n", "0")) or None

    async def body() -> AsyncIterator[bytes]:
        i = 0
        while n is None or i < n:
            yield (f'data: {{"note": "{KEY}"}}\n\n' if i == 1 else f"data: {i}\n\n").encode()
            i += 1
            await asyncio.sleep(0.02)
        yield b"data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route("/leak", _leaky)])


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(APP) as url:
        yield url


def _good(path: Path, url: str) -> bytes:
    """A good cassette for ``url`` (no secret in it); its bytes."""
    cassette = ssemock.Cassette()
    cassette.add(
        "GET",
        url,
        [b"data: good\n\n", b"data: [DONE]\n\n"],
        times=[0.001, 0.002],
        headers={"content-type": "text/event-stream"},
    )
    cassette.save(path)
    return path.read_bytes()


def _assert_masked(path: Path) -> ssemock.Cassette:
    """``path`` holds no secret: not the key, no part of it the scan would find, and REDACTED
    where the key was."""
    text = path.read_text(encoding="utf-8")
    assert KEY not in text and KEY[12:40] not in text
    cassette = ssemock.Cassette.load(path)
    assert find_secrets(cassette) == []
    assert b"REDACTED" in cassette.interactions[-1].response.body
    return cassette


# -- refused for a secret -------------------------------------------------------------------------


def _record(path: Path, url: str, mode: RecordMode, got: list[bytes]) -> None:
    with ssemock.use_cassette(path, record_mode=mode):
        with httpx.Client() as client:
            got.append(client.get(url).content)


@pytest.mark.parametrize("mode", ["once", "all"])
def test_a_refused_recording_is_kept_masked_and_accept_makes_it_the_cassette(
    tmp_path: Path, server: str, mode: RecordMode, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chat.json"
    url = f"{server}/leak?n=3"
    good = _good(path, url) if mode == "all" else None
    got: list[bytes] = []
    with pytest.raises(ssemock.CassetteError) as caught:
        _record(path, url, mode, got)
    message = str(caught.value)
    refused = tmp_path / "chat.refused.json"
    assert "refusing to save" in message and KEY not in message and KEY[12:40] not in message
    assert f"kept with every secret masked in {refused}" in message
    assert "masked: interaction 0 response.body: " in message and f"ssemock accept {refused}" in message
    assert (path.read_bytes() == good) if good is not None else not path.exists()  # the cassette is untouched
    kept = _assert_masked(refused)
    body = kept.interactions[-1].response.body
    assert body.count(b"\n\n") == 4 and body.endswith(b"data: [DONE]\n\n")  # every event, every boundary kept
    assert len(kept.interactions[-1].response.ends) == len(kept.interactions[-1].response.times)

    assert main(["accept", "--check", str(refused)]) == 0
    assert refused.exists()
    assert main(["accept", str(refused)]) == 0
    out = capsys.readouterr().out
    assert "masked: interaction 0 response.body: 1 x REDACTED" in out and KEY not in out
    assert not refused.exists()
    assert ssemock.Cassette.load(path).interactions[-1].response.body == body
    with ssemock.use_cassette(path):  # replays without a second call (the network is locked)
        with httpx.Client() as client:
            assert client.get(url).content == body
    assert KEY in got[0].decode()  # the client got the real stream while it was recorded


def test_accept_refuses_a_file_that_still_holds_a_secret_or_is_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = tmp_path / "chat.refused.json"
    cassette = ssemock.Cassette()
    cassette.add("GET", "http://h.test/s", [f"data: {KEY}\n\n".encode()])
    cassette.save(refused, scan_secrets=False)  # a hand-made file that still holds the key
    assert main(["accept", str(refused)]) == 1
    err = capsys.readouterr().err
    assert "a secret is left in it: interaction 0 response.body" in err and KEY not in err
    assert not (tmp_path / "chat.json").exists() and refused.exists()
    assert main(["accept", str(tmp_path / "chat.json")]) == 1
    assert "is not a refused recording" in capsys.readouterr().err


# -- interrupted ------------------------------------------------------------------------------------

USE_CASSETTE = r"""
import asyncio, os, signal, sys, httpx, ssemock
path, url, how = sys.argv[1:4]

def record():
    with ssemock.use_cassette(path, record_mode="all"):
        with httpx.Client() as client, client.stream("GET", url) as r:
            for i, chunk in enumerate(r.iter_raw()):
                print("chunk", i, flush=True)
                if i == 3 and how == "exit":
                    sys.exit(3)

async def record_async(started):
    async with ssemock.use_cassette(path, record_mode="all"):
        async with httpx.AsyncClient() as client, client.stream("GET", url) as r:
            i = 0
            async for chunk in r.aiter_raw():
                print("chunk", i, flush=True)
                i += 1
                if i == 4:
                    started.set()

async def cancelled():
    started = asyncio.Event()
    task = asyncio.create_task(record_async(started))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled", flush=True)

if how == "sigterm-exit":  # an application that turns SIGTERM into SystemExit
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
if how == "cancel":
    asyncio.run(cancelled())
else:
    record()
"""

PYTEST_RUN = r"""
import asyncio, os, sys, httpx, pytest

@pytest.mark.ssemock
def test_long():
    how = HOW
    if how == "cancel":
        async def read():
            async with httpx.AsyncClient() as client, client.stream("GET", os.environ["URL"]) as r:
                i = 0
                async for chunk in r.aiter_raw():
                    print("chunk", i, flush=True)
                    i += 1
                    if i == 4:
                        asyncio.current_task().cancel()
        asyncio.run(read())
    with httpx.Client() as client, client.stream("GET", os.environ["URL"]) as r:
        for i, chunk in enumerate(r.iter_raw()):
            print("chunk", i, flush=True)
            if i == 3 and how == "exit":
                sys.exit(3)
"""

# how -> (signal sent after chunk 3 or None, whether a partial is kept). SIGTERM unwinds as Ctrl-C
# while ssemock records; "sigterm-exit": an application's own handler turns it into SystemExit.
ROUTES = {
    "sigint": (signal.SIGINT, True),
    "sigterm": (signal.SIGTERM, True),
    "sigterm-exit": (signal.SIGTERM, True),
    "exit": (None, True),
    "cancel": (None, True),
}
PYTEST_ROUTES = {
    "sigint": (signal.SIGINT, True),
    "sigterm": (signal.SIGTERM, True),
    "exit": (None, True),
    "cancel": (None, True),
    "timeout-signal": (None, True),
    "timeout-thread": (None, True),
}
# the routes that end their test, not the session: one pytest run holds the three (a module each)
ONE_RUN = ("cancel", "exit", "timeout-signal")


def _run(argv: list[str], env: dict[str, str], cwd: Path, send: signal.Signals | None) -> str:
    proc = subprocess.Popen(
        argv, cwd=cwd, env={**os.environ, **env}, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("chunk 3") and send is not None:
                proc.send_signal(send)
                break
        return "".join(seen) + proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _check(path: Path, good: bytes, kept: bool, out: str) -> None:
    assert path.read_bytes() == good, out  # the good cassette, byte for byte
    partial = path.with_name(path.stem + ".partial.json")
    assert KEY not in out and KEY[12:40] not in out
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name] + [partial.name] * kept), out
    if kept:
        x = _assert_masked(partial).interactions[0]
        assert not x.response.complete and x.response.body.startswith(b"data: 0\n\n")


@pytest.mark.parametrize("how", sorted(ROUTES))
def test_an_interrupted_use_cassette_keeps_the_good_cassette_and_a_masked_partial(
    tmp_path: Path, server: str, how: str
) -> None:
    path = tmp_path / "c.json"
    url = f"{server}/leak"  # endless: only the interruption ends it
    good = _good(path, url)
    send, kept = ROUTES[how]
    out = _run([sys.executable, "-c", USE_CASSETTE, str(path), url, how], {}, tmp_path, send)
    _check(path, good, kept, out)


def _pytest_run(
    folder: Path, url: str, hows: list[str], send: signal.Signals | None
) -> tuple[dict[str, tuple[Path, bytes]], str]:
    """One pytest process running a module per route in ``hows`` (test_long, endless, under the
    route's interruption), each over its good cassette: their paths and bytes by route, and the
    run's output."""
    goods, modules = {}, ["test_" + how.replace("-", "_") for how in hows]
    for how, module in zip(hows, modules):
        # pytest-timeout in the route's mode (the mark does what --timeout and --timeout-method do)
        mark = f'@pytest.mark.timeout(2, method="{how.split("-")[1]}")\n' if how.startswith("timeout") else ""
        code = f"HOW = {how!r}\n" + PYTEST_RUN.replace(
            "@pytest.mark.ssemock\n", f"@pytest.mark.ssemock\n{mark}"
        )
        (folder / f"{module}.py").write_text(code)
        path = folder / "cassettes" / module / "test_long.json"
        path.parent.mkdir(parents=True)
        goods[how] = (path, _good(path, url))
    # only the plugins the run needs (ssemock, pytest-timeout for its routes): the environment's
    # others (hypothesis, anyio, respx, xdist, ...) cost ~0.5 CPU-s a start and play no part here
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "ssemock",
        *(["-p", "timeout"] if any(how.startswith("timeout") for how in hows) else []),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-s",
        "--ssemock-record-mode=all",
        *(f"{module}.py" for module in modules),
    ]
    return goods, _run(argv, {"URL": url, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, folder, send)


@pytest.fixture(scope="module")
def one_run(
    tmp_path_factory: pytest.TempPathFactory, server: str
) -> tuple[dict[str, tuple[Path, bytes]], str]:
    """The routes of ONE_RUN interrupted in one pytest process (a start costs ~1 CPU-s)."""
    return _pytest_run(tmp_path_factory.mktemp("interrupted"), f"{server}/leak", list(ONE_RUN), None)


def _said(out: str, path: Path) -> str:
    """What the run said about ``path``: the line naming it and the indented lines under it."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if f"{path} is unchanged" in line)
    end = next((j for j in range(start + 1, len(lines)) if not lines[j].startswith("  ")), len(lines))
    return "\n".join(lines[start:end])


@pytest.mark.parametrize("how", sorted(PYTEST_ROUTES))
def test_an_interrupted_pytest_recording_keeps_the_good_cassette_and_a_masked_partial(
    tmp_path: Path, server: str, how: str, request: pytest.FixtureRequest
) -> None:
    send, kept = PYTEST_ROUTES[how]
    if how in ONE_RUN:
        goods, out = request.getfixturevalue("one_run")
    else:
        goods, out = _pytest_run(tmp_path, f"{server}/leak", [how], send)
    path, good = goods[how]
    _check(path, good, kept, out)
    if kept:
        assert f"{path} is unchanged" in out and "partial recording is kept in" in _said(out, path), out
        assert "masked: interaction 0 response.body" in _said(out, path) or how == "timeout-thread", out


def test_sigterm_is_trapped_only_while_recording_and_only_over_the_default(
    tmp_path: Path, server: str
) -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with ssemock.use_cassette(tmp_path / "a.json", record_mode="once"):
            trapped = signal.getsignal(signal.SIGTERM)
            with httpx.Client() as client:
                client.get(f"{server}/leak?n=1")
        assert callable(trapped) and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        with ssemock.use_cassette(tmp_path / "a.json"):  # a replay never touches it
            assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL

        def mine(signum: int, frame: object) -> None:
            pass

        signal.signal(signal.SIGTERM, mine)
        with ssemock.use_cassette(tmp_path / "b.json", record_mode="once"):  # the application's own: kept
            assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_partial_that_cannot_be_written_is_a_warning_not_in_place_of_the_interrupt(
    tmp_path: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.json"
    good = _good(path, f"{server}/leak?n=3")
    real = ssemock.Cassette.save

    def full_disk(self: ssemock.Cassette, target: Any = None, **options: Any) -> Path:
        if str(target).endswith(".partial.json"):
            raise OSError(28, "No space left on device")
        return real(self, target, **options)

    monkeypatch.setattr(ssemock.Cassette, "save", full_disk)
    with pytest.warns(
        ssemock.SsemockWarning, match="c.json: it is unchanged, but the partial recording could not"
    ):
        with pytest.raises(KeyboardInterrupt):
            with ssemock.use_cassette(path, record_mode="all"):
                with httpx.Client() as client, client.stream("GET", f"{server}/leak?n=3") as r:
                    next(r.iter_raw())
                    raise KeyboardInterrupt
    assert path.read_bytes() == good and sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]

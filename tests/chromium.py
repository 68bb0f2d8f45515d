"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
open a page and wait for the promise it names to settle, then read its DOM. ``--dump-dom``
(tests/test_serve.py) is enough for pages whose work is HTTP fetches, which hold its virtual time;
a WebSocket does not, so a page speaking one is waited on by its own promise instead: no sleep, no
wall-clock bound but the hang guard."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import needs
from needs import CHROMIUM

BOUND = 90.0
"""Seconds before a page that never settles fails the test: a hang guard, never a measure."""


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int) -> None:
        self.proc, self._out, self._in = proc, os.fdopen(to_browser, "wb"), os.fdopen(from_browser, "rb")
        self._next = 0

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send a command; its result (events before it are skipped)."""
        self._next += 1
        ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self._out.write(json.dumps(message).encode() + b"\0")
        self._out.flush()
        while True:
            answer = self._read()
            if answer.get("id") == ident:
                assert "error" not in answer, (method, answer["error"])
                return dict(answer["result"])

    def _read(self) -> dict[str, Any]:
        data = bytearray()
        while not data.endswith(b"\0"):
            byte = self._in.read(1)
            if not byte:
                self.proc.wait(timeout=30)
                stderr = self.proc.stderr.read().decode("utf-8", "replace") if self.proc.stderr else ""
                raise AssertionError(f"chromium closed its DevTools pipe: {stderr[-2000:]}")
            data += byte
        return dict(json.loads(data[:-1]))


def settled_dom(
    url: str,
    profile: Path,
    promise: str,
    *,
    screenshot: Path | None = None,
    size: tuple[int, int] = (1000, 700),
) -> str:
    """Open ``url`` in a headless Chromium, await the page's ``promise`` (a JavaScript expression,
    such as ``window.finished``), and return the page's DOM then; with ``screenshot``, also write
    a PNG of the ``size`` (CSS pixels, scale 1) viewport there (one browser start for both)."""
    needs.chromium("the browser tests")
    to_read, to_browser = os.pipe()  # chromium reads commands on fd 3
    from_browser, to_write = os.pipe()  # and writes answers on fd 4
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        "--remote-debugging-pipe",
        "about:blank",
    ]

    def fds() -> None:
        os.dup2(to_read, 3)
        os.dup2(to_write, 4)

    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(3, 4, to_read, to_write),  # (kept open: dup2 in the child made 3 and 4)
        preexec_fn=fds,
    )
    os.close(to_read)
    os.close(to_write)
    pipe = _Pipe(proc, to_browser, from_browser)
    try:
        target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
        session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        if screenshot is not None:
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=size[0],
                height=size[1],
                deviceScaleFactor=1,
                mobile=False,
            )
        pipe.call("Page.navigate", session, url=url)  # answered once the page's document is committed
        expression = (
            "new Promise((ok, fail) => { const go = () => Promise.resolve(" + promise + ")"
            ".then(() => ok(document.documentElement.outerHTML), fail);"
            " document.readyState === 'complete' ? go() : addEventListener('load', go); })"
            ".then(x => x, e => 'failed: ' + e)"
        )
        found = pipe.call(
            "Runtime.evaluate",
            session,
            expression=f"Promise.race([{expression}, new Promise(r => setTimeout(() => r('hang: not settled'), {BOUND * 1000:.0f}))])",
            awaitPromise=True,
            returnByValue=True,
        )
        dom = str(found["result"]["value"])
        assert not dom.startswith(("failed:", "hang:")), dom
        if screenshot is not None:
            shot = pipe.call("Page.captureScreenshot", session, format="png")
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        return dom
    finally:
        try:
            pipe.call("Browser.close")
        except (AssertionError, OSError, ValueError):
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for f in (pipe._out, pipe._in):
            try:
                f.close()
            except OSError:
                pass

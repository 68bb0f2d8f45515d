"""A test service speaking LaunchDarkly's SSE contract-test protocol for the browser's own
EventSource, in headless Chromium: ``python conformance/clients/browser_service.py --port PORT``.

Chromium opens this service's page, which long-polls it for commands (open a stream, listen for
a type, close) and posts back what each EventSource delivers; the service forwards those as the
harness's numbered callbacks. Each command is answered once the page has applied it, so a
listener is in place before the harness lets the stream start."""

from __future__ import annotations

import argparse
import itertools
import json
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

CHROMIUM = "/usr/bin/chromium"
_APPLIED = 20.0  # seconds the page gets to apply a command

PAGE = b"""<!doctype html><meta charset="utf-8"><title>EventSource test service</title><script>
const sources = new Map();
function post(id, message) {
  const s = sources.get(id);
  if (!s) return;
  s.chain = s.chain.then(() => fetch("/deliver", {method: "POST", body: JSON.stringify({id, message})})).catch(() => {});
}
function apply(c) {
  if (c.op === "open") {
    const source = new EventSource(c.url);
    const deliver = (ev) => post(c.id, {kind: "event", event: {type: ev.type, data: ev.data, id: ev.lastEventId}});
    sources.set(c.id, {source, deliver, chain: Promise.resolve()});
    source.addEventListener("message", deliver);
    source.onerror = () => post(c.id, {kind: "error", comment: source.readyState === EventSource.CLOSED ? "closed" : "reconnecting"});
  } else if (c.op === "listen") {
    const s = sources.get(c.id);
    if (s) s.source.addEventListener(c.type, s.deliver);
  } else if (c.op === "close") {
    const s = sources.get(c.id);
    if (s) { s.source.close(); sources.delete(c.id); }
  }
}
(async () => {
  let after = 0;
  for (;;) {
    try {
      const commands = await (await fetch("/next?after=" + after)).json();
      for (const c of commands) {
        apply(c);
        after = c.seq;
      }
      if (commands.length) await fetch("/ack", {method: "POST", body: JSON.stringify({seq: after})});
    } catch (e) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
})();
</script>"""


class _Service(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, version: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.version = version
        self.commands: queue.Queue[dict[str, Any]] = queue.Queue()
        self.acked = 0
        self.changed = threading.Condition()
        self.seq = itertools.count(1)
        self.ids = itertools.count(1)
        self.callbacks: dict[int, tuple[str, itertools.count[int]]] = {}
        self.http = httpx.Client(timeout=30.0, trust_env=False)

    def command(self, command: dict[str, Any]) -> bool:
        """Send the page a command; whether it applied it in time."""
        with self.changed:
            seq = next(self.seq)
            self.commands.put({**command, "seq": seq})
            return self.changed.wait_for(lambda: self.acked >= seq, timeout=_APPLIED)


class _Handler(BaseHTTPRequestHandler):
    server: _Service

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _answer(
        self, status: int, body: bytes = b"", kind: str = "application/json", location: str = ""
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        if location:
            self.send_header("location", location)
        self.end_headers()
        self.wfile.write(body)

    def _json(self) -> dict[str, Any]:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        found = json.loads(raw) if raw else {}
        return found if isinstance(found, dict) else {}

    def do_GET(self) -> None:
        if self.path == "/":
            about = {
                "capabilities": ["reconnect", "event-type-listeners"],
                "name": "chromium-eventsource",
                "version": self.server.version,
                "parallel": 4,  # Chromium opens six connections per host at most
            }
            return self._answer(200, json.dumps(about).encode())
        if self.path == "/page":
            return self._answer(200, PAGE, "text/html; charset=utf-8")
        if self.path.startswith("/next"):
            found = []
            try:
                found.append(self.server.commands.get(timeout=5))
                while True:
                    found.append(self.server.commands.get_nowait())
            except queue.Empty:
                pass
            return self._answer(200, json.dumps(found).encode())
        self._answer(404)

    def do_POST(self) -> None:
        body = self._json()
        server = self.server
        if self.path == "/ack":
            with server.changed:
                server.acked = max(server.acked, int(body.get("seq", 0)))
                server.changed.notify_all()
            return self._answer(200)
        if self.path == "/deliver":
            found = server.callbacks.get(int(body.get("id", 0)))
            if found is not None:
                callback, counter = found
                try:
                    server.http.post(f"{callback}/{next(counter)}", json=body.get("message"))
                except httpx.HTTPError:
                    pass
            return self._answer(200)
        if self.path == "/":
            ident = next(server.ids)
            server.callbacks[ident] = (str(body["callbackUrl"]), itertools.count(1))
            if not server.command({"op": "open", "id": ident, "url": body["streamUrl"]}):
                return self._answer(503)
            return self._answer(201, location=f"/streams/{ident}")
        ident = int(self.path.rsplit("/", 1)[-1]) if self.path.startswith("/streams/") else 0
        if ident not in server.callbacks:
            return self._answer(404)
        if body.get("command") != "listen":
            return self._answer(400)
        ok = server.command({"op": "listen", "id": ident, "type": body["listen"]["type"]})
        self._answer(200 if ok else 503)

    def do_DELETE(self) -> None:
        ident = int(self.path.rsplit("/", 1)[-1]) if self.path.startswith("/streams/") else 0
        if self.server.callbacks.pop(ident, None) is None:
            return self._answer(404)
        self.server.command({"op": "close", "id": ident})
        self._answer(204)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    version = subprocess.run(
        [CHROMIUM, "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the harness's stop ends Chromium too
    service = _Service(args.port, version)
    threading.Thread(target=service.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="ssemock-chromium-", ignore_cleanup_errors=True) as profile:
        browser = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"http://127.0.0.1:{args.port}/page",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            browser.wait()
        finally:
            browser.terminate()
            browser.wait(timeout=10)


if __name__ == "__main__":
    main()

"""The harness's side of LaunchDarkly's SSE contract-test protocol
(github.com/launchdarkly/sse-contract-tests, docs/service_spec.md): a client's test service is
asked its capabilities (``GET /``), told to open a stream (``POST /`` with ``streamUrl`` and
``callbackUrl``; the answer's ``Location`` names the stream), to listen for an event type
(``POST`` to the stream, ``{"command": "listen"}``), and to close it (``DELETE``); and a test
service a client's entry starts as a command is started and stopped here."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx

__all__ = ["Entry", "TestService", "started"]

_START = 60.0  # seconds a test service gets to answer GET / once started


@dataclass(frozen=True)
class Entry:
    """A client to score: its name, language, the command that starts its test service
    (``{port}`` is a free port; run from ``cwd``) or the URL of one already running, and the call a
    reproducer shows (``{url}`` is the stream's URL)."""

    name: str
    language: str
    call: str
    command: str = ""
    url: str = ""
    cwd: str = "."

    @classmethod
    def of(cls, raw: dict[str, Any], where: str) -> Entry:
        """An entry from a clients file's table; ValueError names the file and what is wrong."""
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{where}: a [[client]] has no 'name': give each client a name")
        fields = {k: raw.get(k, "") for k in ("language", "call", "command", "url", "cwd")}
        bad = [k for k, v in fields.items() if not isinstance(v, str)]
        if bad:
            raise ValueError(f"{where}: client {name!r}: '{bad[0]}' must be a string")
        if not fields["command"] and not fields["url"]:
            raise ValueError(
                f"{where}: client {name!r} has neither 'command' (to start its test service) nor 'url'"
            )
        return cls(
            name,
            fields["language"] or "?",
            fields["call"],
            fields["command"],
            fields["url"],
            fields["cwd"] or ".",
        )


@dataclass
class TestService:
    """A running test service: its URL, what ``GET /`` said (capabilities, name, version)."""

    url: str
    status: dict[str, Any] = field(default_factory=dict)
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30.0, trust_env=False))

    @property
    def capabilities(self) -> frozenset[str]:
        """The optional features the service says its client has."""
        found = self.status.get("capabilities", [])
        return frozenset(c for c in found if isinstance(c, str)) if isinstance(found, list) else frozenset()

    def create(self, stream_url: str, callback_url: str, tag: str) -> str:
        """Open a stream; the URL of its resource."""
        body = {"streamUrl": stream_url, "callbackUrl": callback_url, "tag": tag, "initialDelayMs": 1}
        answer = self.http.post(self.url, json=body)
        answer.raise_for_status()
        return urljoin(self.url + "/", answer.headers["location"])

    def listen(self, stream: str, event_type: str) -> None:
        """Ask the client to listen for ``event_type`` (the ``event-type-listeners`` capability)."""
        self.http.post(stream, json={"command": "listen", "listen": {"type": event_type}}).raise_for_status()

    def close(self, stream: str) -> None:
        """Close a stream (a service that lost it already answers 404: fine)."""
        self.http.delete(stream)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class started:
    """``with started(entry, root) as service``: the entry's test service, started from its
    command (its output to ``log``; and stopped after) or reached at its URL; RuntimeError when
    it never answers."""

    def __init__(self, entry: Entry, root: Path, log: Path | None = None) -> None:
        self.entry, self.root, self.log = entry, root, log
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> TestService:
        url = self.entry.url
        if self.entry.command:
            port = _free_port()
            argv = [part.replace("{port}", str(port)) for part in shlex.split(self.entry.command)]
            with open(self.log or os.devnull, "wb") as log:  # what the client prints, kept apart
                self.proc = subprocess.Popen(
                    argv, cwd=self.root / self.entry.cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log
                )
            url = f"http://127.0.0.1:{port}"
        service = TestService(url.rstrip("/"))
        deadline = time.monotonic() + _START
        while True:
            try:
                answer = service.http.get(service.url, timeout=2.0)
                if answer.status_code == 200:
                    service.status = answer.json() if answer.content else {}
                    return service
            except (httpx.HTTPError, ValueError):
                pass
            if (self.proc is not None and self.proc.poll() is not None) or time.monotonic() > deadline:
                self.__exit__()
                raise RuntimeError(
                    f"client {self.entry.name!r}: its test service ({self.entry.command or url}) did not "
                    f"answer GET / within {_START:.0f} s"
                )
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

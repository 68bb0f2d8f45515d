"""A mitmproxy addon that records into an ssemock cassette, chunk by chunk with arrival times:
forward mode, for an app that can only be given ``HTTPS_PROXY``.

mitmproxy holds a response until its end unless ``flow.response.stream`` is set; set to a
callable, mitmproxy hands it every chunk as it arrives and forwards what it returns, but keeps
no body (its issue #4469). This addon sets that callable for every response: the client gets
each chunk at once, unchanged, and the addon keeps the chunk (decoded, when the body is
compressed) with its time since the request started. What it keeps is bounded: past
``ssemock_max_body_bytes`` decoded bytes (64 MiB; a compressed body is inflated a bounded piece
at a time, `ssemock.framing.content_coding`) the recording stops there, marked incomplete as a
Python recording cut at ``max_body_bytes`` is, while the client still gets every byte. When the
response ends (or breaks off: then it is kept marked incomplete), the interaction is redacted,
merged into the cassette and saved under the cassette's lock after the secret scan, as a
Python recording is
(`ssemock.player.session.save`); a refused recording is kept masked beside the cassette. Its
log line masks the URL's secrets (``?sig=``) as ``ssemock proxy``'s do; mitmdump's own flow
lines, which print URLs and headers unmasked, are turned off unless ``flow_detail`` is set.

mitmproxy cannot share ssemock's environment (its newest release for Python 3.11 pins
``h11<=0.14``, which httpcore rejects), so it runs from a side environment holding mitmproxy,
ssemock without its dependencies and the few modules this addon uses (orjson, filelock,
ahocorasick-rs): ``bash .ci/mitmproxy-env DIR`` builds one from ``requirements/mitmproxy.lock``.
Then::

    DIR/bin/mitmdump -s $(DIR/bin/python -c "import ssemock.commands.mitmproxy_addon as a; print(a.__file__)") \\
        --set ssemock_cassette=cassettes/app.json [--set ssemock_hosts=api.openai.com]
    HTTPS_PROXY=http://127.0.0.1:8080 SSL_CERT_FILE=~/.mitmproxy/mitmproxy-ca-cert.pem your-app

This module imports neither mitmproxy nor httpx: mitmproxy calls it by duck typing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

# absolute imports: mitmproxy loads this file by its path, as a top-level module
from ssemock.framing.content_coding import InflateLimit, decoder
from ssemock.plan import matching
from ssemock.player.session import save, stat
from ssemock.redaction import keep as _keep
from ssemock.redaction.rules import mask_text, mask_url, redact_request, redact_response
from ssemock.store.cassette import Cassette, Interaction, Request, Response, SecretError

__all__ = ["SsemockRecorder", "addons"]

_HOP = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
MAX_BODY_BYTES = 64 * 1024 * 1024
"""The default of ``ssemock_max_body_bytes``: the most of one body recorded, decoded (a Python
recording's default ``max_body_bytes``); past it the recording stops, marked incomplete."""


class _Take:
    """One response being recorded: its chunks (decoded, at most ``limit`` bytes) and their times."""

    def __init__(self, flow: Any, limit: int) -> None:
        self.t0 = flow.request.timestamp_start or time.time()
        headers = [(k.lower(), v) for k, v in flow.response.headers.items(multi=True)]
        encoding = next((v for k, v in headers if k == "content-encoding"), "identity")
        self.decode = decoder(encoding, limit)
        drop = _HOP | ({"content-encoding"} if self.decode else set())
        self.status = flow.response.status_code
        self.headers = [(k, v) for k, v in headers if k not in drop]
        self.parts: list[bytes] = []
        self.ends: list[int] = []
        self.times: list[float] = []
        self.size = 0
        self.limit = limit
        self.truncated = False
        """The body passed ``limit`` (decoded): the recording stopped there."""
        self.ended = False

    def __call__(self, data: bytes) -> bytes:
        """mitmproxy's stream callable: every chunk as it arrives (b"" at the end), forwarded as is."""
        if not data:
            self.ended = True
        elif not self.truncated:
            t = time.time() - self.t0
            try:
                kept = self.decode(data) if self.decode is not None else data
            except InflateLimit as exc:  # a bomb, or a long stream: the recording ends at the limit
                kept, self.truncated = exc.kept, True
            if self.size + len(kept) > self.limit:
                kept, self.truncated = kept[: self.limit - self.size], True
            if kept:
                self.parts.append(kept)
                self.size += len(kept)
                self.ends.append(self.size)
                self.times.append(round(t, 4))
        return data

    def error(self, broken: str | None) -> dict[str, Any] | None:
        """Why the recording is incomplete (None: it is whole)."""
        if self.truncated:
            return {
                "type": "RecordingTruncated",
                "at_byte": self.size,
                "message": f"the recording stopped at ssemock_max_body_bytes={self.limit} decoded bytes "
                "(ssemock); replay ends the stream there",
            }
        if broken is not None:
            return {"type": "MitmproxyError", "message": broken, "at_byte": self.size}
        return None


class SsemockRecorder:
    """The addon: options ``ssemock_cassette`` (the cassette file) and ``ssemock_hosts`` (a
    comma-separated list of hosts to record; empty: every host)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._interactions: list[Interaction] | None = None
        self._disk: tuple[int, int] | None = None
        self._existed = False
        self.kept: list[_keep.Kept] = []
        self.saved = 0

    def load(self, loader: Any) -> None:
        loader.add_option(
            "ssemock_cassette", str, "cassettes/mitmproxy.json", "the ssemock cassette to record into"
        )
        loader.add_option("ssemock_hosts", str, "", "comma-separated hosts to record (empty: every host)")
        loader.add_option(
            "ssemock_max_body_bytes",
            int,
            MAX_BODY_BYTES,
            "the most of one response body recorded, decoded (past it: recorded up to there, incomplete)",
        )

    def running(self) -> None:
        """mitmdump's own flow lines print each URL and, from ``flow_detail=2``, the headers as
        they are (``?sig=``, ``authorization``): left at their default they are turned off, the
        addon's masked line naming each recording instead; a level the user set is kept."""
        from mitmproxy import ctx  # only ever called inside mitmproxy

        if "flow_detail" in ctx.options and not ctx.options.has_changed("flow_detail"):
            ctx.options.update(flow_detail=0)

    def _options(self) -> tuple[Path, set[str], int]:
        from mitmproxy import ctx  # only ever called inside mitmproxy

        hosts = {h.strip().lower() for h in str(ctx.options.ssemock_hosts).split(",") if h.strip()}
        return Path(str(ctx.options.ssemock_cassette)), hosts, int(ctx.options.ssemock_max_body_bytes)

    def _log(self, message: str) -> None:
        import logging

        logging.getLogger("ssemock").warning(mask_text(message))

    def responseheaders(self, flow: Any) -> None:
        _, hosts, limit = self._options()
        if hosts and flow.request.pretty_host.lower() not in hosts:
            return
        take = _Take(flow, limit)
        flow.metadata["ssemock"] = take
        flow.response.stream = take

    def response(self, flow: Any) -> None:
        self._finish(flow, None)

    def error(self, flow: Any) -> None:
        self._finish(flow, str(flow.error) if flow.error else "the connection broke off")

    def _finish(self, flow: Any, error: str | None) -> None:
        take = flow.metadata.pop("ssemock", None)
        if not isinstance(take, _Take):
            return
        path, _, _ = self._options()
        why = take.error(error)
        request = Request(
            flow.request.method,
            flow.request.pretty_url,
            [(k.lower(), v) for k, v in flow.request.headers.items(multi=True)],
            flow.request.raw_content or None,
        )
        response = Response(
            take.status,
            take.headers,
            b"".join(take.parts),
            take.ends,
            take.times,
            why is None,
            why,
        )
        new = Interaction(redact_request(request), redact_response(response))
        with self._lock:
            if self._interactions is None:
                self._existed = path.exists()
                self._interactions = Cassette.load(path).interactions if self._existed else []
                self._disk = stat(path) if self._existed else None
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._interactions, self._disk = save(
                    path,
                    self._interactions,
                    [new],
                    disk=self._disk,
                    record_mode="new_episodes",
                    match_on=matching.resolve(("method", "path", "query", "body")),
                    existed=self._existed,
                    kept=self.kept,
                )
            except SecretError as exc:
                self._log(f"ssemock: NOT saved into {path}: {exc}")
                return
            self._existed = True
            self.saved += 1
        self._log(
            f"ssemock: {flow.request.method} {mask_url(flow.request.pretty_url)} -> {take.status}, "
            f"{len(take.ends)} chunk(s) saved into {path}"
            + ("" if why is None else f" (incomplete: {why['type']} at byte {why['at_byte']})")
        )


addons = [SsemockRecorder()]

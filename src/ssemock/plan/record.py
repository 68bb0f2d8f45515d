"""Recording: a live response stream becomes an interaction, chunk by chunk, as it arrives.

Each client stack (`ssemock.stacks`) tees its live response into a `Recorder`:
``begin`` with the status and headers, ``chunk`` per arrival, ``finish`` at the end. The client
gets every chunk the moment the network delivers it; the cassette gets the same chunk with its
arrival time. Content-Encoding is removed for storage so boundaries and re-chunking
apply to what an SSE decoder sees, a bounded piece at a time (`ssemock.framing.content_coding`):
a compressed bomb stops at ``max_body_bytes`` like any long body, never inflated whole.

A client that closes the stream before its end (an SDK that stops at the answer it wanted, a
``break``) would leave the recording cut there. With ``drain`` seconds (``drain_on_close``, on by
default) the stack keeps reading the real stream into the recording after the client's close, to
its end, bounded by that time and by ``max_body_bytes``: the cassette holds the whole stream,
which replays under other chunkings and in other tests read further than this client did.

A recording run with a chunking, transform or fault set gives the client what the replay run
will give it (`Recorder.replays`): the stack reads the live stream whole into the recording
first, then serves the recording through the same plan a replay uses (`Recorder.served`),
so one test passes both ways. A server-push stream (`Recorder.pushes`: a GET event stream,
which may never end) cannot be read whole first: it is served as it arrives, each completed
event planned as the replay will plan it (`ssemock.plan.push_recording`), while the recording gets the
whole live stream as it arrived. The client may then see one seam a replay does not give it: a
chunk that ends at an event boundary where the recorded chunk went on into the next event. A
variant that needs the whole stream (``coalesced``, ``truncate``, ...) is refused there, with
`ssemock.RecordingVariantError` naming it.
"""

from __future__ import annotations

import bisect
import math
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Sequence
from itertools import repeat
from operator import add, floordiv, truediv
from typing import Any, Literal, overload

import httpx

from ..framing.content_coding import InflateLimit, decoder
from ..redaction.rules import mask_url, redact_request, redact_response
from ..scan.incremental import BodyScan, scanned_as_recorded
from ..store.cassette import HOP_HEADERS, Headers, Interaction, Request, Response
from .errors import SsemockWarning
from .push_recording import LiveSource

__all__ = [
    "DRAIN_SECONDS",
    "MAX_BODY_BYTES",
    "Recorder",
    "RequestHook",
    "ResponseHook",
    "drain_seconds",
    "request_from_httpx",
]

#: The default bound on one recorded body (the client still gets everything): a stream that never
#: ends must not fill the memory; past it the interaction is cut and marked truncated.
MAX_BODY_BYTES = 64 * 1024 * 1024
#: How long a recording keeps reading, by default (``drain_on_close=True``), a stream the client
#: closed before its end: long enough for the rest of an LLM answer, short enough that an endless
#: stream (a server-push GET) costs a bounded wait.
DRAIN_SECONDS = 30.0
RequestHook = Callable[[Request], "Request | None"]
"""A ``before_record_request`` hook: gets each request before it is matched or recorded and
returns it (changed, e.g. redacted: it is matched and saved in that form) or ``None`` to send
it to the real server untouched, neither matched nor recorded."""
ResponseHook = Callable[[Response], "Response | None"]
"""A ``before_record_response`` hook: gets each response before it is saved and returns it
(changed, e.g. redacted) or ``None`` to leave the interaction out of the cassette."""
_clock = time.perf_counter_ns
_FEED = 64 << 10  # body bytes handed to the scan at a time (a call a chunk cost ~0.25 us: ~0.6 ms a MB)
_JOINED = 8  # a feed of more chunks than this (small ones) is joined in the recording (`Recorder._feed`)


def request_from_httpx(request: httpx.Request) -> Request:
    """The redacted cassette form of a sent request (the form used for matching, too)."""
    headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in request.headers.raw]
    body = request.content if request.method not in ("GET", "HEAD") or request.content else None
    return redact_request(Request(request.method, str(request.url), headers, body))


def drain_seconds(drain_on_close: bool | float) -> float | None:
    """``drain_on_close`` as the seconds to keep reading after an early close (None: not at all):
    True is `DRAIN_SECONDS`, False or 0 is off, a number is that many seconds."""
    if drain_on_close is True:
        return DRAIN_SECONDS
    if drain_on_close is False:
        return None
    if isinstance(drain_on_close, (int, float)) and math.isfinite(drain_on_close) and drain_on_close >= 0:
        return float(drain_on_close) or None
    raise ValueError(
        f"drain_on_close must be True, False or a number of seconds >= 0, got {drain_on_close!r}"
    )


class Recorder:
    """One live exchange being recorded; ``tee`` wraps the real response's stream."""

    def __init__(
        self,
        sent: httpx.Request,
        request: Request,
        *,
        on_response: Callable[[Recorder], None],
        before_record_response: ResponseHook | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        drain: float | None = DRAIN_SECONDS,
        serve: Callable[[Recorder, LiveSource | None], httpx.Response] | None = None,
    ) -> None:
        self._t0_ns = _clock()
        self.t0 = self._t0_ns / 1e9  # time.perf_counter() then
        self.max_body_bytes = max_body_bytes
        self.drain_limit = drain  # seconds to keep reading after the client closes early (None: not at all)
        self.sent = sent  # as the client sent it
        self.request = request  # as it will be stored: redacted, and after before_record_request
        self._on_response = on_response
        self._before_response = before_record_response
        self.status = 0
        self.headers: Headers = []
        self._parts: list[bytes] = []
        self._ends: list[int] = []
        self._times: list[int] = []  # perf_counter_ns() at each chunk's arrival (`_tenths`)
        self._size = 0
        self.complete = False
        self.ended = False
        self.error: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._decode: Callable[[bytes], bytes] | None = None
        self._serve = serve  # a recording run's variant: how to serve the whole recording as replay would
        self._scan: BodyScan | None = None  # an event stream's secret scan, done as it arrives
        self._unfed: list[bytes] = []  # the chunks not yet handed to the scan (`_feed`) ...
        self._feed_at = _FEED  # ... until the body reaches this size

    def replays(self) -> bool:
        """Whether the client is to get the recording served as a replay of it (a chunking,
        transform or fault is set): the stack reads the live stream to its end into the recording,
        then serves `served`; or, for a server-push stream (`pushes`), serves it as it arrives
        through ``served(live)``. Asked once the status and headers arrived."""
        return self._serve is not None

    def pushes(self) -> bool:
        """Whether the live response is a server-push stream: an event stream answering a GET
        (the legacy MCP transport's), which may never end, so it cannot be read whole before the
        client gets it."""
        content_type = next((v for k, v in self.headers if k == "content-type"), "")
        return self.request.method == "GET" and "event-stream" in content_type

    def served(self, live: LiveSource | None = None) -> httpx.Response:
        """The response a replay of this (finished) recording serves, to hand the client; with
        ``live`` (a server-push stream, `pushes`), the response that serves it as it arrives
        (`ssemock.plan.push_recording`): if ``live.taken`` is False after it, the stack closes the live stream."""
        assert self._serve is not None, "served() is for a recording that replays()"
        return self._serve(self, live)

    def begin(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        """The live response's status and headers arrived (the stack tees its body next)."""
        self.status = status
        headers = [(k.lower(), v) for k, v in headers]
        encoding = next((v.strip().lower() for k, v in headers if k == "content-encoding"), "identity")
        self._decode = decoder(encoding, self.max_body_bytes)  # bounded: a bomb inflates no further
        drop = HOP_HEADERS | ({"content-encoding"} if self._decode else set())
        self.headers = [(k, v) for k, v in headers if k not in drop]
        content_type = next((v for k, v in self.headers if k == "content-type"), "")
        if "content-encoding" not in {k for k, _ in self.headers} and BodyScan.wanted(content_type):
            recorder = weakref.ref(self)  # no cycle: a finished recording is freed at once

            def so_far() -> bytes | None:
                alive = recorder()
                return None if alive is None else alive._body()

            self._scan = BodyScan(content_type, so_far)  # the save at exit need not scan the body again
        self._on_response(self)

    def chunk(self, data: bytes) -> None:
        """A piece of the body arrived (the client gets it as it is; the recording keeps at
        most ``max_body_bytes`` of the body and then stops, marked truncated)."""
        t = _clock()  # as read: made seconds since the request, rounded, in bulk when read (`_tenths`)
        if self.ended:
            return
        over = False
        if self._decode is not None:
            try:
                data = self._decode(data)
            except InflateLimit as exc:  # decoded past max_body_bytes: what fits is kept
                data, over = exc.kept, True
        if not data and not over:
            return
        lock = self._lock
        lock.acquire()  # (not `with`: a chunk of an LLM's stream paid ~70 ns more for the protocol)
        try:
            size = self._size + len(data)
            if over or size > self.max_body_bytes:
                data = data[: self.max_body_bytes - self._size]
                size = self._size + len(data)
                self._truncate()
                if not data:
                    return
            self._parts.append(data)
            self._ends.append(size)
            self._times.append(t)
            self._size = size
            if self._scan is not None:
                self._unfed.append(data)
                if size >= self._feed_at:
                    self._feed()
        finally:
            lock.release()

    def _feed(self) -> None:
        """Hand the scan the chunks since the last call (small ones joined), called with ``_lock``
        held: the body so far (the scan may ask for it) is then what it was fed. The recording keeps
        the join in their place (while they are the last parts, as they are but after `_body`): a
        body's final join then copies a few blocks, not a chunk at a time (0.67 ms for 2,500
        chunks of a 1 MB stream, from all over the heap). A feed of `_JOINED` chunks or fewer
        (large ones) is handed over as it is: their join would copy the body once more for no gain
        at the final join."""
        assert self._scan is not None
        unfed, self._unfed = self._unfed, []
        if len(unfed) > _JOINED:
            block = b"".join(unfed)
            if self._parts[-len(unfed) :] == unfed:  # (the same bytes: the same objects, as a rule)
                self._parts[-len(unfed) :] = [block]
            unfed = [block]
        self._scan.feed_parts(unfed)
        self._feed_at = self._size + _FEED

    def _truncate(self) -> None:
        self.ended = True
        self.error = {
            "type": "RecordingTruncated",
            "at_byte": self.max_body_bytes,
            "message": f"the recording stopped at max_body_bytes={self.max_body_bytes} "
            f"(ssemock); replay ends the stream there",
        }
        warnings.warn(
            f"ssemock: recording of {self.request.method} {mask_url(self.request.url)} cut at "
            f"max_body_bytes={self.max_body_bytes}: the stream went on longer (raise max_body_bytes to keep "
            f"more); the cassette marks it truncated",
            SsemockWarning,
            stacklevel=2,
        )

    def finish(self, exc: BaseException | None = None) -> None:
        """The stream ended: normally, with an error, or abandoned (GeneratorExit / close)."""
        if self.ended:
            return
        self.ended = True
        self.complete = exc is None or (isinstance(exc, GeneratorExit) and self.saw_terminator())
        if isinstance(exc, Exception):
            self.error = {"type": type(exc).__name__, "message": str(exc), "at_byte": self._size}

    # -- a client that closes before the end -------------------------------------------------

    def closed_early(self) -> bool:
        """The client closed the stream before it ended: True when the stack is to drain the rest
        into the recording (`drain` / `adrain`); else the recording ends here, as
        abandoned (complete if the protocol's terminator had arrived: nothing is missing then).
        A close on the way out of an interrupt (Ctrl-C, SystemExit, a cancelled task) never
        drains: whoever interrupts wants to stop now. An ordinary exception drains (the cassette
        is saved after one), and so does a generator closed while it held the stream open."""
        if self.ended:
            return False
        unwinding = sys.exc_info()[1]
        interrupted = unwinding is not None and not isinstance(unwinding, (Exception, GeneratorExit))
        saw = self.saw_terminator()
        if self.drain_limit is None or interrupted or saw:
            self.ended, self.complete = True, saw
            return False
        return True

    def drain(self, rest: Callable[[], None], then: Callable[[], None]) -> None:
        """Read the rest of the stream after an early close: ``rest()`` reads it into the recorder
        until the stream or the recording ends; ``then()`` closes the real stream after it. Both
        run on a thread, so the caller waits at most ``drain_limit`` seconds even while a read blocks;
        past that the recording ends where it got to (a warning says so) and the thread closes
        the stream once its read returns."""
        failed: list[BaseException] = []

        def run() -> None:
            try:
                self._read_rest(rest)
            finally:
                try:
                    then()
                except BaseException as exc:  # raised to the caller if it still waits
                    failed.append(exc)

        thread = threading.Thread(target=run, name="ssemock-drain", daemon=True)
        thread.start()
        deadline = time.monotonic() + (self.drain_limit or 0.0)
        try:
            while thread.is_alive() and time.monotonic() < deadline:
                thread.join(0.05)  # in slices: a Ctrl-C is handled at once, not at the deadline
        except BaseException:  # interrupted while draining: stop now
            self.finish(GeneratorExit())
            raise
        if thread.is_alive():
            self._give_up()
        elif failed:
            raise failed[0]

    async def adrain(self, rest: Callable[[], Awaitable[object]]) -> None:
        """`drain` for async stacks: awaits ``rest()`` for at most ``drain_limit`` seconds (the
        caller closes the real stream after it); cancelled, the recording ends where it got to."""
        import anyio  # httpx's own dependency; works under asyncio and trio

        try:
            with anyio.move_on_after(self.drain_limit) as scope:
                try:
                    await rest()
                except Exception as exc:
                    self.finish(exc)
                else:
                    self.finish(None)
            if scope.cancelled_caught:
                self._give_up()
        finally:
            if not self.ended:
                self.finish(GeneratorExit())

    def _read_rest(self, rest: Callable[[], None]) -> None:
        try:
            rest()
        except Exception as exc:
            self.finish(exc)
        else:
            self.finish(None)  # the stream ended (nothing when the recording had ended first)

    def _give_up(self) -> None:
        """The rest did not arrive within ``drain_limit`` seconds: the recording ends where it got to."""
        if self.ended:
            return
        self.finish(GeneratorExit())
        if not self.complete:
            warnings.warn(
                f"ssemock: recording of {self.request.method} {mask_url(self.request.url)}: the client "
                f"closed the stream before its end, and the rest did not arrive within drain_on_close="
                f"{self.drain_limit:g} s; the cassette marks it incomplete (a larger drain_on_close waits longer, "
                f"False does not wait: for a stream that never ends)",
                SsemockWarning,
                stacklevel=3,
            )

    def _tenths(self, clocks: list[int]) -> list[int]:
        """Chunk arrival clocks (nanoseconds) as tenths of a millisecond since the request, to the
        nearest (a half up), in integers: two C-level passes (seconds as stored are these / 10_000,
        `_response`; the save writes them / 10 as milliseconds, with no rounding again)."""
        return list(map(floordiv, map(add, clocks, repeat(50_000 - self._t0_ns)), repeat(100_000)))

    def _response(self, body: bytes, ends: list[int], clocks: list[int]) -> Response:
        """The response recorded so far, from ``body``, its chunk ``ends`` and their arrival ``clocks``."""
        tenths = self._tenths(clocks)
        times = list(map(truediv, tenths, repeat(10_000)))
        response = Response(self.status, list(self.headers), body, ends, times, self.complete, self.error)
        response._tenths = tenths
        return response

    def _body(self) -> bytes:
        """The body so far, joined once and kept joined (the chunks need not live twice);
        called with ``_lock`` held."""
        body = b"".join(self._parts)
        self._parts = [body]
        return body

    def saw_terminator(self) -> bool:
        """Whether the protocol's terminator (``[DONE]``, ``message_stop``, ...) has arrived: a
        stream closed or interrupted before EOF is complete then (the openai SDK closes right
        after ``[DONE]``)."""
        from ..protocols.accumulate import accumulate
        from .expect import decode_body

        with self._lock:
            body = self._body()
        content_type = next((v for k, v in self.headers if k == "content-type"), "")
        try:
            return accumulate(
                decode_body(body, content_type), url=self.request.url, content_type=content_type
            ).complete
        except ValueError:
            return False

    @property
    def rewrites_responses(self) -> bool:
        """Whether a ``before_record_response`` hook rewrites the recorded response."""
        return self._before_response is not None

    def since(self, offset: int) -> Response:
        """The recording from byte ``offset`` of its body on, as a response of its own (chunk
        ends and times counted from there; not redacted, no hook): what a server-push stream
        planned as it arrives needs, in time proportional to what is new."""
        with self._lock:
            parts, need = self._parts, self._size - offset
            got, k = 0, len(parts)
            while got < need and k:
                k -= 1
                got += len(parts[k])
            tail = b"".join(parts[k:])  # bytes, whatever the stack handed (a bytearray)
            body = tail[got - need :] if got > need else tail
            first = bisect.bisect_right(self._ends, offset)
            ends = [end - offset for end in self._ends[first:]]
            return self._response(body, ends, self._times[first:])

    @overload
    def interaction(self, *, hooked: Literal[True] = ...) -> Interaction | None: ...
    @overload
    def interaction(self, *, hooked: Literal[False]) -> Interaction: ...

    def interaction(self, *, hooked: bool = True) -> Interaction | None:
        """The interaction as recorded so far, redacted; after ``before_record_response`` unless
        ``hooked`` is False (None when that hook drops it)."""
        with self._lock:
            if self._unfed:
                self._feed()
            body = self._body()
            response = self._response(body, list(self._ends), self._times)
        response = redact_response(response)
        if hooked and self._before_response is not None:
            changed = self._before_response(response)
            if changed is None:
                return None
            response = changed
        if self._scan is not None:
            scanned_as_recorded(response, self._scan, body)
        return Interaction(self.request, response)

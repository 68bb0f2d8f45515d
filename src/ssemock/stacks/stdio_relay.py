"""The program a matching ``stdio=`` child runs instead of its own command line: a small Python
process on the client's real pipes, so every subprocess API works unchanged.

Run as ``python -I -S stdio_relay.py SPEC`` (by path, standard library only: the child's
environment may have no ``PYTHONPATH``, and it starts in ~20 ms). ``SPEC`` is a JSON file the
player wrote (`ssemock.stacks.stdio`); what happens is logged, a JSON array a line, to the file it
names (written as it happens, so a killed relay loses nothing it saw):

* ``record``: starts the real command line and relays stdin, stdout and stderr both ways, noting
  each read (``[stream, t_ms, base64]``, stdin's end as ``["stdin", t_ms, null]``) before
  passing it on, then ``["exit", status]``; it exits as the child did (a SIGTERM is passed on).
* ``replay``: runs the plan's steps: ``["expect", k, base64]`` reads the client's next stdin line
  and compares it with the recorded one (as JSON, without the spec's ``ignore`` paths, when both
  are JSON), ``["end"]`` waits for stdin's end, ``["write", fd, base64]``, ``["sleep", s]``,
  ``["stall", s]`` (silence, ended early by stdin's end), ``["exit", status]``; after
  ``["lenient"]`` (a fault acted) stdin lines are read but no longer compared. A different line
  is logged (``["mismatch", k, base64]`` or ``["extra", base64]``), said on stderr, and ends the
  relay with status 70; the client closing stdin early is logged (``["ended", k]``). After the
  steps it waits for stdin's end, then exits with the recorded status.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

__all__ = ["MISMATCH_STATUS", "NOT_STARTED", "main"]

MISMATCH_STATUS = 70  # EX_SOFTWARE: the client sent what the recording's client did not


class _Log:
    """The log file: one JSON array a line, flushed as written, from any thread."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._t0 = time.monotonic()

    def ms(self) -> float:
        return round((time.monotonic() - self._t0) * 1000, 1)

    def note(self, *entry: Any) -> None:
        with self._lock:
            self._file.write(json.dumps(list(entry)) + "\n")
            self._file.flush()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _exit(status: int) -> None:
    """End this process as the child ended: with its status, or by its signal."""
    sys.stdout.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status & 0xFF)


NOT_STARTED = 127  # the shell's status for a command that could not be run


def _record(spec: dict[str, Any], log: _Log) -> None:
    try:
        child = subprocess.Popen(
            spec["argv"],
            executable=spec.get("executable"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:  # as the client would see it without ssemock: nothing runs
        message = f"ssemock: could not start {spec['argv'][0]!r}: {exc.strerror or exc}\n".encode()
        log.note("stderr", log.ms(), _b64(message))
        _write_all(2, message)
        log.note("exit", NOT_STARTED)
        _exit(NOT_STARTED)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # Ctrl-C is the child's: its exit is recorded
        signal.signal(signal.SIGINT, lambda *_: child.send_signal(signal.SIGINT))

    def pump(source: IO[bytes], fd: int, stream: str) -> None:
        while chunk := os.read(source.fileno(), 65536):
            log.note(stream, log.ms(), _b64(chunk))
            try:
                _write_all(fd, chunk)
            except OSError:  # the client closed its end: keep reading, so the child never blocks
                pass

    def feed(sink: IO[bytes]) -> None:
        try:
            while chunk := os.read(0, 65536):
                log.note("stdin", log.ms(), _b64(chunk))
                _write_all(sink.fileno(), chunk)
        except OSError:
            pass  # the child closed its stdin
        log.note("stdin", log.ms(), None)
        try:
            sink.close()
        except OSError:
            pass

    outs = [
        threading.Thread(target=pump, args=(child.stdout, 1, "stdout"), daemon=True),
        threading.Thread(target=pump, args=(child.stderr, 2, "stderr"), daemon=True),
    ]
    for thread in outs:
        thread.start()
    threading.Thread(target=feed, args=(child.stdin,), daemon=True).start()
    status = child.wait()
    for thread in outs:
        thread.join()
    log.note("exit", status)
    _exit(status)


class _Stdin:
    """The client's stdin as lines, read on a thread of its own: ``line()`` waits for the next
    (None at the end), ``closed`` is set at the end."""

    def __init__(self) -> None:
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.closed = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin.buffer:
            self.lines.put(line)
        self.lines.put(None)
        self.closed.set()


def _leave_out(value: Any, path: list[Any]) -> None:
    """Remove what ``path`` (keys, indexes, None for any) reaches in ``value``: a key deleted, a
    list item made null (the list keeps its length)."""
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head is None else [head] if head in value else []
    elif isinstance(value, list):
        keys = (
            list(range(len(value)))
            if head is None
            else [head]
            if isinstance(head, int) and head < len(value)
            else []
        )
    else:
        keys = []
    for key in keys:
        if rest:
            _leave_out(value[key], rest)
        elif isinstance(value, dict):
            del value[key]
        else:
            value[key] = None


def _same(sent: bytes, recorded: bytes, ignore: list[list[Any]]) -> bool:
    """Whether a stdin line matches the recorded one: as JSON without the ignored paths when
    both are JSON, else byte for byte (line ends aside)."""
    try:
        a, b = json.loads(sent), json.loads(recorded)
    except ValueError:
        return sent.rstrip(b"\r\n") == recorded.rstrip(b"\r\n")
    for path in ignore:
        _leave_out(a, path)
        _leave_out(b, path)
    return bool(a == b)


def _replay(spec: dict[str, Any], log: _Log) -> None:
    stdin = _Stdin()
    try:
        waits_end = _steps(spec["steps"], stdin, log, spec.get("ignore", []))
    except BrokenPipeError:  # the client closed its end of stdout: nothing more to write
        waits_end = False
    if waits_end:
        stdin.closed.wait()
    _exit(spec["exit"] if spec["exit"] is not None else 0)


def _steps(steps: list[list[Any]], stdin: _Stdin, log: _Log, ignore: list[list[Any]]) -> bool:
    """Run the steps; whether stdin's end is still to wait for."""
    waits_end, lenient = True, False
    for step in steps:
        kind = step[0]
        if kind == "lenient":
            lenient = True
        elif kind == "write":
            _write_all(step[1], base64.b64decode(step[2]))
        elif kind == "sleep":
            time.sleep(step[1])
        elif kind == "stall":
            stdin.closed.wait(step[1])
        elif kind == "exit":
            _exit(step[1])
        elif kind == "expect":
            line = stdin.lines.get()
            if line is None:
                log.note("ended", step[1])
                waits_end = False
                break
            if not lenient and not _same(line, base64.b64decode(step[2]), ignore):
                log.note("mismatch", step[1], _b64(line))
                sys.stderr.write(f"ssemock: stdin line {step[1]} differs from the recording's\n")
                _exit(MISMATCH_STATUS)
        elif kind == "end":
            line = stdin.lines.get()
            while lenient and line is not None:
                line = stdin.lines.get()
            if line is not None:
                log.note("extra", _b64(line))
                sys.stderr.write("ssemock: stdin has a line after the recording's last\n")
                _exit(MISMATCH_STATUS)
            waits_end = False
    return waits_end


def main(argv: list[str]) -> None:
    """Run the spec file ``argv[1]``."""
    with open(argv[1], encoding="utf-8") as fh:
        spec = json.load(fh)
    log = _Log(spec["log"])
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # Ctrl-C ends it quietly, as by the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    (_record if spec["mode"] == "record" else _replay)(spec, log)


if __name__ == "__main__":
    main(sys.argv)

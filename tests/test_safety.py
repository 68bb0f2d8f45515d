"""Failure safety: a recording killed (SIGKILL) or interrupted (KeyboardInterrupt), a save that
fails (permissions, a full disk), and cassette paths built from hostile test names.

Tests run as root here, so a read-only directory would not stop a write: the failures are
injected by monkeypatching ``os.replace`` / ``os.fsync`` / ``os.open`` (the temp file).
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import fill_the_disk
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

import ssemock
from ssemock.commands.loopback import running
from ssemock.plugin import cassette_name


async def _slow(request: Request) -> StreamingResponse:
    """``n`` events (endless without ``n``), one every 20 ms."""
    n = int(request.query_params.get("n", "0")) or None

    async def body() -> AsyncIterator[bytes]:
        i = 0
        while n is None or i < n:
            yield f"data: {i}\n\n".encode()
            i += 1
            await asyncio.sleep(0.02)
        yield b"data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


APP = Starlette(routes=[Route("/slow", _slow)])


@pytest.fixture(scope="module")
def slow() -> Iterator[str]:
    with running(APP) as url:
        yield url


def _record(path: Path, url: str, mode: str = "all") -> bytes:
    with ssemock.use_cassette(path, record_mode=mode):
        with httpx.Client() as client:
            with client.stream("GET", url) as r:
                return b"".join(r.iter_raw())


def _good_cassette(path: Path, url: str) -> bytes:
    """A complete recording of ``url`` at ``path``; returns the file's bytes."""
    body = _record(path, url)
    assert body.endswith(b"data: [DONE]\n\n")
    (x,) = ssemock.Cassette.load(path).interactions
    assert x.response.complete
    return path.read_bytes()


def _others(folder: Path, *keep: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p not in keep)


# -- SIGKILL -----------------------------------------------------------------------------------

KILLED = r"""
import os, sys, time, httpx, ssemock
path, url, mode, where = sys.argv[1:5]
if where == "save":  # stop inside the save: after the temp file is written, before os.replace
    real = os.replace
    def slow_replace(src, dst):
        print("replacing", flush=True)
        time.sleep(60)
        real(src, dst)
    os.replace = slow_replace
with ssemock.use_cassette(path, record_mode=mode):
    with httpx.Client() as client:
        with client.stream("GET", url) as r:
            for i, chunk in enumerate(r.iter_raw()):
                print("chunk", i, flush=True)
                if where == "save" and i == 2:
                    break
"""


def _run_and_kill(path: Path, url: str, mode: str, where: str, wait_for: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(path), url, mode, where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 20
        for line in proc.stdout:
            if line.startswith(wait_for) or time.monotonic() > deadline:
                break
        else:
            pytest.fail(f"the recording subprocess ended early: {proc.stderr.read() if proc.stderr else ''}")
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigkill_while_recording_leaves_the_previous_cassette_intact(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "c.json"
    good = _good_cassette(path, f"{slow}/slow?n=3")
    _run_and_kill(path, f"{slow}/slow?n=3", "all", "stream", "chunk 2")
    assert path.read_bytes() == good
    assert ssemock.Cassette.load(path).interactions[0].response.complete
    assert _others(tmp_path, path) == []


def test_sigkill_while_recording_a_new_cassette_leaves_no_file(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "new.json"
    _run_and_kill(path, f"{slow}/slow", "once", "stream", "chunk 2")
    assert not path.exists() and _others(tmp_path) == []  # the next run records again


def test_sigkill_inside_the_save_leaves_the_previous_cassette_intact(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "c.json"
    good = _good_cassette(path, f"{slow}/slow?n=6")
    _run_and_kill(path, f"{slow}/slow?n=6", "all", "save", "replacing")
    assert path.read_bytes() == good
    ssemock.Cassette.load(path)
    # the temp file written before the kill stays behind (nothing can remove it after SIGKILL);
    # it is hidden and named *.tmp, so it is never taken for a cassette
    leftovers = _others(tmp_path, path)
    assert len(leftovers) == 1 and leftovers[0].startswith(".c.json.") and leftovers[0].endswith(".tmp")
    # the next recording saves normally, and removes it: its writer is gone
    _record(path, f"{slow}/slow?n=2")
    old, new = ssemock.Cassette.load(path).interactions
    assert old.response.body.count(b"\n\n") == 7 and new.response.body.count(b"\n\n") == 3
    assert _others(tmp_path, path) == []


def _saving(path: Path, url: str) -> subprocess.Popen[str]:
    """A process stopped inside a save of ``path``, its temp file written, before os.replace."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(path), url, "all", "save"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("replacing"):
            return proc
    proc.kill()
    pytest.fail(f"the saving subprocess ended early: {proc.stderr.read() if proc.stderr else ''}")


def test_a_save_leaves_the_temp_file_of_a_live_save_alone_until_it_is_stale(
    tmp_path: Path, slow: str
) -> None:
    """Another process saving the same cassette (an xdist worker) keeps its temp file; once that
    file is older than STALE_AFTER it is taken for the leftover of a hung save and removed."""
    path = tmp_path / "c.json"
    _good_cassette(path, f"{slow}/slow?n=2")
    other = tmp_path / "other.json"
    ssemock.Cassette().save(other)
    proc = _saving(path, f"{slow}/slow?n=6")
    try:
        (live,) = _others(tmp_path, path, other)
        ssemock.Cassette.load(path).save()
        ssemock.Cassette.load(other).save()  # another cassette's save never looks at it
        assert _others(tmp_path, path, other) == [live]
        stale = time.time() - ssemock.store.cassette.STALE_AFTER - 60
        os.utime(tmp_path / live, (stale, stale))
        ssemock.Cassette.load(path).save()
        assert _others(tmp_path, path, other) == []
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("name", ["c" * 250 + ".json", "世" * 83 + ".json", "é" * 125 + ".json"])
def test_a_cassette_named_up_to_name_max_saves(tmp_path: Path, name: str) -> None:
    """The temp name is cut to fit NAME_MAX (255 bytes); it used to be the name plus ~25 bytes,
    so names of 235+ bytes failed with ENAMETOOLONG."""
    assert len(os.fsencode(name)) <= 255
    c = ssemock.Cassette()
    c.add("GET", "http://h.test/", [b"data: x\n\n"])
    path = c.save(tmp_path / name)
    assert ssemock.Cassette.load(path).interactions[0].response.body == b"data: x\n\n"
    assert _others(tmp_path, path) == []


# -- KeyboardInterrupt ---------------------------------------------------------------------------


def _interrupted(path: Path, url: str, mode: str) -> None:
    with pytest.raises(KeyboardInterrupt):
        with ssemock.use_cassette(path, record_mode=mode):
            with httpx.Client() as client:
                with client.stream("GET", url) as r:
                    for i, _ in enumerate(r.iter_raw()):
                        if i == 1:
                            raise KeyboardInterrupt


def test_keyboard_interrupt_while_recording_never_leaves_a_broken_file(tmp_path: Path, slow: str) -> None:
    """Whatever is saved on the way out is a whole, loadable cassette with one interaction."""
    path = tmp_path / "c.json"
    url = f"{slow}/slow?n=6"
    _good_cassette(path, url)
    _interrupted(path, url, "all")
    assert len(ssemock.Cassette.load(path).interactions) == 1
    assert _others(tmp_path, path) == ["c.partial.json"]  # the partial recording, beside it and named so
    (partial,) = ssemock.Cassette.load(tmp_path / "c.partial.json").interactions
    assert not partial.response.complete


def test_keyboard_interrupt_while_rerecording_keeps_the_previous_recording(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "c.json"
    url = f"{slow}/slow?n=6"
    good = _good_cassette(path, url)
    _interrupted(path, url, "all")
    assert path.read_bytes() == good


def test_keyboard_interrupt_while_recording_a_new_cassette_saves_nothing(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "new.json"
    _interrupted(path, f"{slow}/slow?n=6", "once")
    assert not path.exists()


# -- failing saves -----------------------------------------------------------------------------


def _cassette() -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("GET", "http://h.test/x", [b"data: new\n\n"])
    return cassette


def _old(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "c.json"
    old = ssemock.Cassette()
    old.add("GET", "http://h.test/x", [b"data: old\n\n"])
    old.save(path)
    return path, path.read_bytes()


def _mentions(exc: BaseException, path: Path) -> bool:
    text = " ".join([str(exc), *getattr(exc, "__notes__", [])])
    return str(path) in text or path.name in text


FAILURES = {
    "replace-EACCES": ("replace", PermissionError(errno.EACCES, "Permission denied")),
    "replace-EROFS": ("replace", OSError(errno.EROFS, "Read-only file system")),
    "write-ENOSPC": ("write", OSError(errno.ENOSPC, "No space left on device")),
    "open-EACCES": ("open", PermissionError(errno.EACCES, "Permission denied")),
}


def _inject(monkeypatch: pytest.MonkeyPatch, where: str, error: OSError) -> None:
    """``error`` raised where the save calls ``where``; ``write``: by every write to the temp
    file (a full disk; the save no longer syncs the file, so ENOSPC comes from a write)."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise error

    if where == "write":
        fill_the_disk(monkeypatch, error)
        return
    target = {"replace": (os, "replace"), "open": (os, "open")}[where]
    monkeypatch.setattr(*target, fail)


@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_save_raises_the_os_error_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    path, old = _old(tmp_path)
    where, error = FAILURES[failure]
    _inject(monkeypatch, where, error)
    with pytest.raises(OSError) as info:
        _cassette().save(path)
    assert info.value.errno == error.errno
    monkeypatch.undo()
    assert path.read_bytes() == old
    assert _others(tmp_path, path) == []


def test_a_failing_save_names_the_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = _old(tmp_path)
    _inject(monkeypatch, "write", OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(OSError) as info:
        _cassette().save(path)
    assert _mentions(info.value, path), str(info.value)


def test_a_failing_save_at_the_end_of_a_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    """The error leaves the ``with`` block (not swallowed), the old cassette and the folder are
    as they were, and the interception is off afterwards."""
    path = tmp_path / "c.json"
    url = f"{slow}/slow?n=2"
    good = _good_cassette(path, url)
    with pytest.raises(OSError) as info:
        with ssemock.use_cassette(path, record_mode="all"):
            with httpx.Client() as client:
                client.get(url)
            _inject(monkeypatch, "replace", OSError(errno.ENOSPC, "No space left on device"))
    assert info.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert path.read_bytes() == good and _others(tmp_path, path) == []
    with httpx.Client() as client:  # not intercepted any more: the real server answers
        assert client.get(url).text.endswith("data: [DONE]\n\n")


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing-0644"])
def test_saved_cassette_gets_the_usual_file_mode(tmp_path: Path, existing: bool) -> None:
    want = 0o666 & ~_umask()
    path = tmp_path / "mode.json"
    if existing:
        _cassette().save(path)
        os.chmod(path, want)
    _cassette().save(path)
    assert path.stat().st_mode & 0o777 == want, oct(path.stat().st_mode & 0o777)


# -- cassette names from test names ----------------------------------------------------------------


class _Node:
    def __init__(self, name: str) -> None:
        self.name = name


HOSTILE = [
    "test_x[../../etc/passwd]",
    "test[a/b\\c]",
    "test[..\\..\\windows]",
    "..",
    ".",
    "",
    "/",
    "/etc/passwd",
    "../../../../tmp/x",
    "test[\x00]",
    "test[\n]",
    "test[" + "a" * 10_000 + "]",
    "test[" + "é" * 300 + "]",
    "テスト[日本語]",
    "test[🙂]",
    "test[ssemock-mid_utf8]",
    "test[-ssemock-bytewise]",
    "C:\\Windows\\x",
    "test[.hidden]",
    "test[...]",
    "test[.json]",
    "test[CON]",
    "test[a:b]",
    "test[a*b?c]",
]


def _assert_confined(name: str) -> None:
    file = cassette_name(_Node(name))
    assert file.endswith(".json")
    assert "/" not in file and "\\" not in file and "\0" not in file and os.sep not in file
    assert file not in (".", "..") and not file.startswith(".")
    assert len(file.encode()) <= 255, len(file.encode())
    base = Path(tempfile.gettempdir()) / "cassettes" / "test_mod"
    assert (base / file).resolve().parent == base.resolve()


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_cassette_names_never_leave_the_cassette_directory(name: str) -> None:
    _assert_confined(name)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(),
        st.text().map(lambda s: f"test_x[{s}]"),
        st.lists(st.sampled_from(["..", "/", "\\", ".", "a", "é", "\0", "[", "]", "-", "ssemock-"])).map(
            "".join
        ),
    )
)
def test_any_test_name_gives_a_confined_cassette_name(name: str) -> None:
    _assert_confined(name)


@pytest.mark.parametrize(
    "a,b",
    [
        ("test_x[a b]", "test_x[a_b]"),
        ("test[日本]", "test[中国]"),
        ("test[" + "a" * 250 + "1]", "test[" + "a" * 250 + "2]"),
        ("test[a/b]", "test[a\\b]"),
    ],
    ids=["space-underscore", "unicode", "long", "slashes"],
)
def test_distinct_test_names_get_distinct_cassettes(a: str, b: str) -> None:
    assert cassette_name(_Node(a)) != cassette_name(_Node(b))


NAMES_TEST = """
import os, httpx, pytest

URL = os.environ["SSEMOCK_SAFETY_SERVER"]

@pytest.mark.ssemock
@pytest.mark.parametrize("who", ["../../escape", "a/b\\\\c", "日本", "x" * 300, "/abs"])
def test_p(who):
    with httpx.Client() as client:
        assert client.get(URL + "/slow?n=1").text.endswith("[DONE]\\n\\n")
"""


def test_hostile_parametrize_ids_record_inside_the_cassette_directory(
    pytester: pytest.Pytester, slow: str
) -> None:
    pytester.makepyfile(test_names=NAMES_TEST)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester._monkeypatch.setenv("SSEMOCK_SAFETY_SERVER", slow)
    before = set(pytester.path.parent.iterdir())
    pytester.runpytest_inprocess("-p", "no:xdist", "--ssemock-record-mode=once").assert_outcomes(passed=5)
    folder = (pytester.path / "cassettes" / "test_names").resolve()
    written = [p.resolve() for p in (pytester.path / "cassettes").rglob("*") if p.is_file()]
    assert len(written) == 5 and all(p.parent == folder for p in written), written
    assert set(pytester.path.parent.iterdir()) == before  # nothing written beside the test folder
    assert not Path("/abs.json").exists() and not Path("/escape.json").exists()


# -- interrupts under pytest, concurrent recorders, bounded recordings ----------------------------

INTERRUPTED_RUN = """
import os, httpx, pytest

@pytest.mark.ssemock
def test_long():
    with httpx.Client() as client, client.stream("GET", os.environ["SLOW"]) as r:
        for i, chunk in enumerate(r.iter_raw()):
            print("chunk", i, flush=True)
"""


def test_ctrl_c_during_a_pytest_rerecording_keeps_the_good_cassette(tmp_path: Path, slow: str) -> None:
    (tmp_path / "test_int.py").write_text(INTERRUPTED_RUN)
    path = tmp_path / "cassettes" / "test_int" / "test_long.json"
    good = _good_cassette(path, f"{slow}/slow?n=3")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "ssemock",  # the one plugin the run needs (the others cost ~0.5 CPU-s a start)
            "-p",
            "no:cacheprovider",
            "-s",
            "--ssemock-record-mode=all",
            "test_int.py",
        ],
        cwd=tmp_path,
        # SLOW never ends: interrupted mid-stream
        env={**os.environ, "SLOW": f"{slow}/slow", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.startswith("chunk 5"):
                break
        proc.send_signal(signal.SIGINT)
        out = "".join(seen) + proc.communicate(timeout=30)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert path.read_bytes() == good, out
    partial = path.with_name("test_long.partial.json")
    assert f"{path} is unchanged" in out and str(partial) in out
    assert not ssemock.Cassette.load(partial).interactions[0].response.complete


TWO_RECORDERS = """
import sys, time, httpx, ssemock
path, url, wait = sys.argv[1:4]
with ssemock.use_cassette(path, record_mode="new_episodes"):
    httpx.get(url)
    time.sleep(float(wait))
"""


def test_two_processes_recording_one_cassette_lose_nothing(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "shared.json"
    first = subprocess.Popen([sys.executable, "-c", TWO_RECORDERS, str(path), f"{slow}/slow?n=1", "1.0"])
    second = subprocess.Popen([sys.executable, "-c", TWO_RECORDERS, str(path), f"{slow}/slow?n=2", "0"])
    assert second.wait(timeout=60) == 0 and first.wait(timeout=60) == 0
    urls = sorted(x.request.url.rsplit("=", 1)[1] for x in ssemock.Cassette.load(path).interactions)
    assert urls == ["1", "2"]  # the slower saver merged the other's recording in


def test_a_recording_is_bounded_and_marked_truncated(tmp_path: Path, slow: str) -> None:
    path = tmp_path / "endless.json"
    got = 0
    with pytest.warns(ssemock.SsemockWarning, match="cut at max_body_bytes=40"):
        with ssemock.use_cassette(path, record_mode="once", max_body_bytes=40):
            with httpx.Client() as client, client.stream("GET", f"{slow}/slow") as r:  # never ends
                for chunk in r.iter_raw():
                    got += len(chunk)  # the client still gets everything
                    if got > 200:
                        break
    (x,) = ssemock.Cassette.load(path).interactions
    assert len(x.response.body) == 40 and not x.response.complete
    assert x.response.error is not None and x.response.error["type"] == "RecordingTruncated"
    with ssemock.use_cassette(path), httpx.Client() as client:
        with client.stream("GET", f"{slow}/slow") as r, pytest.raises(httpx.RemoteProtocolError):
            for _ in r.iter_raw():
                pass
    with pytest.raises(ValueError, match="max_body_bytes"):
        ssemock.use_cassette(path, max_body_bytes=0)

"""The lock of a cassette (`ssemock.store.lock`): one holder at a time across processes, reentrant
within one, and its file gone once no one holds it, so the private folder does not fill up with
a file per cassette ever saved."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import ssemock
from ssemock.commands.loopback import running
from ssemock.store.lock import lock_for


@pytest.fixture
def locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder of this test's own (children too, through TMPDIR); yields where the lock
    files go."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("TMPDIR", str(temp))
    yield temp / f"ssemock-{os.getuid()}" / "locks"


def test_the_lock_file_is_there_while_held_and_gone_after_the_last_release(
    locks: Path, tmp_path: Path
) -> None:
    lock = lock_for(tmp_path / "a.json")
    with lock:
        held = Path(lock.lock_file)
        with lock_for(tmp_path / "a.json") as again:  # the same lock: it nests
            assert again is lock
        assert held.exists()  # the inner release was not the last
    assert not held.exists() and list(locks.iterdir()) == []


COUNTER = """
import sys
from pathlib import Path
from ssemock.store.lock import lock_for
cassette, counter, times = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
for _ in range(times):
    with lock_for(cassette):
        n = int(counter.read_text())
        counter.write_text(str(n + 1))  # read, then written: an overlap of two holders loses one
"""


def test_processes_taking_turns_never_hold_it_at_once_though_its_file_comes_and_goes(
    locks: Path, tmp_path: Path
) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0")
    procs = [
        subprocess.Popen([sys.executable, "-c", COUNTER, str(tmp_path / "c.json"), str(counter), "60"])
        for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    assert counter.read_text() == "240"
    assert list(locks.iterdir()) == []


def test_recording_many_cassettes_leaves_no_lock_file_behind(locks: Path, tmp_path: Path) -> None:
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("hi"))])
    with running(app) as url:
        for i in range(5):
            with ssemock.use_cassette(tmp_path / f"c{i}.json", record_mode="all"):
                httpx.get(url)
    assert len(list(tmp_path.glob("c*.json"))) == 5
    assert not locks.exists() or list(locks.iterdir()) == []


HOLDER = """
import sys
from pathlib import Path
from ssemock.store.lock import lock_for
with lock_for(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_wait_for_a_lock_another_process_holds_ends_at_its_timeout(locks: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "d.json"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(cassette)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        lock = lock_for(cassette)
        with pytest.raises(TimeoutError, match=r"another process holds the cassette lock .*\.lock"):
            lock.acquire(timeout=0.2)
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    lock.acquire(timeout=60)  # its holder gone: taken, and given back as ever
    lock.release()
    assert list(locks.iterdir()) == []


def test_without_fcntl_the_lock_is_filelocks_and_behaves_the_same(
    locks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no ``fcntl`` (Windows), filelock's lock holds the file: nested holds, the
    file there while held and gone after."""
    from ssemock.store import lock as module

    monkeypatch.setattr(module, "fcntl", None)
    lock = lock_for(tmp_path / "w.json")
    assert lock._other is not None
    with lock, lock_for(tmp_path / "w.json"):
        assert Path(lock.lock_file).exists()
    assert list(locks.iterdir()) == []


def test_a_forked_child_holds_none_of_its_parents_locks(locks: Path, tmp_path: Path) -> None:
    """A child forked while its parent holds a lock waits for it like any process (a nested take
    would share the parent's hold), and its end, or a release it makes, leaves the parent's hold:
    another process still cannot take it."""
    cassette = tmp_path / "f.json"
    with lock_for(cassette) as lock:
        pid = os.fork()
        if pid == 0:  # the child: exit codes tell what it saw
            code = 0
            try:
                lock.release()  # not its hold: nothing
                lock_for(cassette).acquire(timeout=0.2)
                code = 1  # taken while the parent holds it
            except TimeoutError:
                pass
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        other = subprocess.run(
            [sys.executable, "-c", TAKER, str(cassette)], capture_output=True, text=True, timeout=60
        )
        assert other.stdout.strip() == "timed out"
    assert list(locks.iterdir()) == []


TAKER = """
import sys
from pathlib import Path
from ssemock.store.lock import lock_for
try:
    lock_for(Path(sys.argv[1])).acquire(timeout=0.2)
    print("taken")
except TimeoutError:
    print("timed out")
"""


def test_a_sweep_removes_what_a_killed_holder_left_and_never_a_held_lock(locks: Path, tmp_path: Path) -> None:
    """A holder killed outright leaves its lock file; the sweep (at the end of a run that
    recorded) removes it once it is `STALE_AFTER` old, and leaves a file a live process holds
    and a fresh one."""
    from ssemock.store.lock import STALE_AFTER, sweep

    def holder(name: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path / name)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        return proc

    killed = holder("killed.json")
    killed.kill()
    killed.wait(timeout=60)
    live = holder("live.json")
    try:
        assert len(list(locks.iterdir())) == 2
        assert sweep() == 0  # fresh: left
        assert sweep(now=time.time() + STALE_AFTER + 1) == 1
        assert [p.name for p in locks.iterdir()] == [Path(lock_for(tmp_path / "live.json").lock_file).name]
    finally:
        assert live.stdin is not None
        live.stdin.close()
        assert live.wait(timeout=60) == 0
    assert list(locks.iterdir()) == []

"""Local files safe from other local users: lock files and run folders live in a folder only
this user can write, lock files are never opened through a symlink, run folders are removed when
the run ends (also after a crash of an earlier run)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssemock.core import runs
from ssemock.core.userdir import private_dir
from ssemock.store.lock import STALE_AFTER, lock_for


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder of this test's own (children too, through TMPDIR), and a private
    XDG_RUNTIME_DIR as systemd makes one per user; yields the private folder ssemock uses."""
    temp, xdg = tmp_path / "temp", tmp_path / "runtime"
    temp.mkdir()
    xdg.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    yield temp / f"ssemock-{os.getuid()}"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_lock_files_live_in_a_folder_only_the_user_can_write(runtime: Path, tmp_path: Path) -> None:
    lock = lock_for(tmp_path / "a.json")
    with lock:
        path = Path(lock.lock_file)
        assert path.parent == runtime / "locks" and path.exists()
        assert _mode(runtime) == _mode(runtime / "locks") == 0o700
        assert _mode(path) & 0o077 == 0
        assert os.lstat(runtime).st_uid == os.getuid()


def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched(
    runtime: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lock = lock_for(tmp_path / "b.json")
    Path(lock.lock_file).parent.mkdir(parents=True, exist_ok=True)
    Path(lock.lock_file).symlink_to(victim)
    with pytest.raises(OSError):
        lock.acquire(timeout=1)
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("hostile", ["symlink", "writable by others"])
def test_an_unsafe_folder_is_passed_over(hostile: str, runtime: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "planted"
    elsewhere.mkdir()
    if hostile == "symlink":  # another user's symlink where ssemock's folder would be
        runtime.symlink_to(elsewhere)
    else:
        runtime.mkdir()
        runtime.chmod(0o777)
    found = private_dir("locks")
    assert found == tmp_path / "runtime" / "ssemock" / "locks"  # the next place: $XDG_RUNTIME_DIR
    assert _mode(found.parent) == 0o700 and list(elsewhere.iterdir()) == []


def test_a_folder_found_safe_is_checked_again_once_it_is_another(runtime: Path, tmp_path: Path) -> None:
    """`private_dir` finds a folder it checked again by one lstat, while it is the same directory:
    once another user's symlink stands where it was (to a folder with a ``locks`` of its own),
    every step is checked again and the symlink passed over."""
    assert private_dir("locks") == private_dir("locks") == runtime / "locks"
    shutil.rmtree(runtime)
    elsewhere = tmp_path / "planted"
    (elsewhere / "locks").mkdir(parents=True)
    runtime.symlink_to(elsewhere)
    assert private_dir("locks") == tmp_path / "runtime" / "ssemock" / "locks"
    assert list((elsewhere / "locks").iterdir()) == []


def test_a_run_folder_is_removed_when_the_run_ends(runtime: Path) -> None:
    folder = runs.folder("run-a")
    (folder / "marker").touch()
    assert folder.parent == runtime / "runs" and _mode(folder) == 0o700
    runs.finish("run-a")
    assert not folder.exists()


def _child(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_a_crashed_run_leaves_nothing_behind_the_next(runtime: Path) -> None:
    alive = _child(
        "import sys, ssemock.core.runs as r; r.folder('alive'); print('ready', flush=True); sys.stdin.read()"
    )
    crashed = _child(
        "import os, ssemock.core.runs as r; (r.folder('crashed') / 'marker').touch(); os._exit(9)"
    )
    assert crashed.wait(timeout=60) == 9
    assert alive.stdout is not None and alive.stdout.readline() == "ready\n"
    assert (runtime / "runs" / "crashed" / "marker").exists()
    runs.folder("next")
    runs.finish("next")  # the next run ends: the crashed run's folder goes, the live one stays
    assert not (runtime / "runs" / "crashed").exists() and not (runtime / "runs" / "next").exists()
    assert (runtime / "runs" / "alive").exists()
    alive.communicate("", timeout=60)
    runs.sweep()
    assert not (runtime / "runs" / "alive").exists()


def test_the_plugin_removes_its_run_folder_and_the_lock_files_killed_recorders_left(
    pytester: pytest.Pytester, runtime: Path, server: str
) -> None:
    stale = private_dir("locks") / "0123.lock"  # a recorder killed while it held it, long ago
    stale.touch()
    os.utime(stale, (time.time() - STALE_AFTER - 60,) * 2)
    pytester.makepyfile(f"""
        import httpx, pytest

        @pytest.mark.ssemock
        def test_x(ssemock):
            httpx.get("{server}/echo")
    """)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:randomly",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "--ssemock-record-mode=once",
    )
    result.assert_outcomes(passed=1)
    assert list(pytester.path.rglob("*.json"))  # it recorded, so it made a run folder
    assert list((runtime / "runs").iterdir()) == []
    assert list((runtime / "locks").iterdir()) == []


def test_a_sweep_keeps_its_lock_until_the_folder_is_gone(tmp_path: Path) -> None:
    """A process that opened a run folder's ``.alive`` just before a sweep took it gets its shared
    lock only once the folder is removed, and then sees its file gone (so it makes the folder
    anew) instead of using a folder removed under it (a race seen in a shuffled full run)."""
    import fcntl

    folder = tmp_path / "run"
    folder.mkdir()
    fd = os.open(folder / ".alive", os.O_RDWR | os.O_CREAT, 0o600)  # opened, not yet locked
    try:
        runs._remove_if_unused(folder)  # the sweep: exclusive lock, remove, then release
        assert not folder.exists()
        fcntl.flock(fd, fcntl.LOCK_SH)  # the other process's lock comes only now ...
        assert not runs._same(fd, folder / ".alive")  # ... and its file is gone: it starts again
    finally:
        os.close(fd)

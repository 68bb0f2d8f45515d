"""The ``ssemock`` package itself: importing it and the first use of its lazily loaded names are
safe from any number of threads at once (one thread never gets a half-imported module)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# One child process: each round drops every ssemock module from sys.modules, so the next round's
# threads are the first to import and touch them, then 16 threads start at one barrier and each
# touches a different public name (and one that all of them share).
_RACE = textwrap.dedent(
    """
    import sys, threading
    NAMES = [
        "Cassette", "Player", "chunking", "explore", "Expected", "accumulate", "held",
        "ServerSentEvent", "faults", "transforms", "replay", "NetworkBlockedError", "sse",
        "ndjson", "matching", "timing",
    ]
    failures = []
    for round in range(ROUNDS):
        for name in [m for m in sys.modules if m == "ssemock" or m.startswith("ssemock.")]:
            del sys.modules[name]
        start = threading.Barrier(len(NAMES))

        def first_use(name):
            start.wait()
            try:
                import ssemock
                getattr(ssemock, name)
                ssemock.Cassette.loads
            except BaseException as error:
                failures.append(f"round {round}, {name}: {error!r}")

        threads = [threading.Thread(target=first_use, args=(name,)) for name in NAMES]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    print(len(failures))
    print("\\n".join(failures[:5]))
    """
)


def test_sixteen_threads_importing_and_first_touching_ssemock_never_see_a_half_imported_module() -> None:
    # before the fix every round failed (AttributeError or NameError from a half-imported module;
    # reading sys.modules again failed 48 rounds of 48, about half the threads each): two rounds,
    # a fresh interpreter's and one after the drop, each costing a whole import of ssemock
    proc = subprocess.run(
        [sys.executable, "-c", _RACE.replace("ROUNDS", "2")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    count, _, detail = proc.stdout.partition("\n")
    assert count == "0", detail

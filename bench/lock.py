"""What the network lock costs: per connect (real loopback connects with and without an active
replay, and the check alone), and per chunk (nothing: the lock sits on connect and name lookup
only, never on reads). Same run; the figure to hold is the added time per connect (<= 2 us).
"""

from __future__ import annotations

import socket
import statistics
import time

import ssemock

N, ROUNDS = 2000, 7


def connects(port: int) -> float:
    t0 = time.perf_counter()
    for _ in range(N):
        s = socket.socket()
        s.connect(("127.0.0.1", port))
        s.close()
    return (time.perf_counter() - t0) / N * 1e6


def main() -> None:
    server = socket.create_server(("127.0.0.1", 0), backlog=4096)
    port = server.getsockname()[1]
    free, locked = [], []
    for _ in range(ROUNDS):
        free.append(connects(port))
        with ssemock.replay(ssemock.Cassette()):  # loopback allowed: the check runs, the connect passes
            locked.append(connects(port))
        while True:  # drain the accept queue between rounds
            server.settimeout(0.001)
            try:
                server.accept()[0].close()
            except OSError:
                break
    server.close()
    a, b = statistics.median(free), statistics.median(locked)
    from ssemock.stacks import lock

    guard = lock.Guard(allowed_hosts=None, blocks=True, where="bench")
    lock.engage(guard)
    t0 = time.perf_counter()
    for _ in range(200_000):
        lock._check(("127.0.0.1", port))
    check = (time.perf_counter() - t0) / 200_000 * 1e6
    lock.release(guard)
    print(
        f"loopback connect without a player {a:7.2f} us, during a replay {b:7.2f} us: +{b - a:.2f} us "
        f"(noise of the syscall included); the check itself {check:.2f} us (target <= 2 us); per chunk: 0"
    )


if __name__ == "__main__":
    main()

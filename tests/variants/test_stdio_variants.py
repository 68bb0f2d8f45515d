"""What a chunking, timing and fault mean on a child's pipes (ssemock.variants.stdio): the
relay's steps, pure values."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import ssemock
from ssemock.store.stdio import Line, StdioSession
from ssemock.variants.stdio import EXIT_MID_STREAM, steps

A, B, C = (
    b'{"id":0,"result":{}}\n',
    b'{"method":"log","params":{"t":"\xc3\xa9"}}\n',
    b'{"id":1,"result":{"x":1}}\n',
)
SESSION = StdioSession(
    "s.py",
    ["s.py"],
    [
        Line("stdin", 0.0, b'{"id":0}\n'),
        Line("stdout", 0.1, A),
        Line("stdin", 0.2, b'{"id":1}\n'),
        Line("stderr", 0.25, b"working\n"),
        Line("stdout", 0.3, B),
        Line("stdout", 0.5, C),
        Line("stdin", 0.6, None),
    ],
    0,
)


def _writes(plan: list[list[Any]], fd: int = 1) -> list[bytes]:
    return [base64.b64decode(s[2]) for s in plan if s[0] == "write" and s[1] == fd]


def _kinds(plan: list[list[Any]]) -> list[str]:
    return [s[0] for s in plan]


@pytest.mark.parametrize("chunking", [str(c) for c in ssemock.chunking.ALL])
def test_every_chunking_keeps_the_bytes_and_the_conversation(chunking: str) -> None:
    plan = steps(SESSION, ssemock.chunking.get(chunking), ssemock.timing.instant)
    assert b"".join(_writes(plan)) == A + B + C and _writes(plan, 2) == [b"working\n"]
    first_expect, second_expect = (k for k, s in enumerate(plan) if s[0] == "expect")
    written_before = b"".join(_writes(plan[:second_expect]))
    assert first_expect == 0 and written_before == A  # the answer to line 1 waits for line 1
    assert plan[-1] == ["end"]


def test_the_cuts_fall_where_the_chunking_says() -> None:
    cut = {
        name: _writes(steps(SESSION, ssemock.chunking.get(name), ssemock.timing.instant))
        for name in ("coalesced", "per_event", "bytewise", "mid_line")
    }
    assert cut["coalesced"] == [A, B + C] and cut["per_event"] == [A, B, C]
    assert all(len(w) == 1 for w in cut["bytewise"])
    assert not {A, B, C} & set(cut["mid_line"]) and len(cut["mid_line"]) > 3  # each line across writes


def test_as_recorded_writes_the_reads_the_child_made() -> None:
    """A line read in two, then a read holding two lines: written so (one write a line before)."""
    read = StdioSession(
        "s.py",
        ["s.py"],
        [
            Line("stdout", 0.1, A, (5,)),
            Line("stdout", 0.3, B, ()),
            Line("stdout", 0.3, C),
            Line("stdin", 0.6, None),
        ],
        0,
    )
    writes = _writes(steps(read, ssemock.chunking.get("as_recorded"), ssemock.timing.instant))
    assert writes == [A[:5], A[5:] + B + C]
    assert _writes(steps(read, ssemock.chunking.get("per_event"), ssemock.timing.instant)) == [A, B, C]
    faulted = steps(
        read,
        ssemock.chunking.get("as_recorded"),
        ssemock.timing.instant,
        ssemock.faults.resolve("trailing_data:at=garbage"),
    )
    assert _writes(faulted)[:2] == [A[:5], A[5:] + B] and _writes(faulted)[-1].startswith(C.rstrip())


def test_recorded_timing_sleeps_the_gaps_and_scaled_scales_them() -> None:
    plan = steps(SESSION, ssemock.chunking.per_event, ssemock.timing.scaled(0.5))
    sleeps = [round(s[1], 3) for s in plan if s[0] == "sleep"]
    assert sleeps == [0.05, 0.05, 0.025, 0.025, 0.1, 0.05]
    assert "sleep" not in _kinds(steps(SESSION, ssemock.chunking.per_event, ssemock.timing.instant))


def _faulted(fault: str) -> list[list[Any]]:
    return steps(SESSION, ssemock.chunking.per_event, ssemock.timing.instant, [ssemock.faults.get(fault)])


def test_disconnect_exits_mid_stream() -> None:
    plan = _faulted("disconnect:after_event=2")
    assert _writes(plan) == [A, B] and plan[-1] == ["exit", EXIT_MID_STREAM]
    assert _writes(_faulted("disconnect:after_byte=25")) == [A, B[:4]]


def test_a_stall_waits_before_its_line_and_the_rest_is_not_compared() -> None:
    plan = _faulted("stall:before_event=1,seconds=30")
    assert _kinds(plan) == ["expect", "write", "expect", "write", "lenient", "stall", "write", "write", "end"]
    assert plan[5] == ["stall", 30.0]


def test_garbage_truncation_and_trailing_lines() -> None:
    assert _writes(_faulted("trailing_data:at=garbage"))[-1] == C[:-1] + b"garbage\n"
    assert _writes(_faulted("trailing_data"))[-1] == b'{"ssemock": "data after the terminator"}\n'
    assert _writes(_faulted("truncate")) == [A, B] and "lenient" in _kinds(_faulted("truncate"))
    cut = _faulted("truncate:at=mid_event")
    assert _writes(cut)[-1] == C[: len(C) // 2] and cut[-1] == ["exit", EXIT_MID_STREAM]


def test_faults_without_a_meaning_on_a_pipe_or_aimed_elsewhere_leave_it_as_recorded() -> None:
    plain = steps(SESSION, ssemock.chunking.per_event, ssemock.timing.instant)
    for fault in (
        "http_error:status=429",
        "error_event:kind=overloaded_error",
        "disconnect:after_event=1,on=0",
    ):
        assert _faulted(fault) == plain

"""The shape searches' accelerated pass (`ssemock.scan.credential_shapes`): whether a text holds a
byte an escape starts with, told in one pass, as the pure code tells it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ssemock.framing import _speedups
from ssemock.scan import credential_shapes


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([b"", b"%", b"\\%&", b"\\%&\x00", b"\xff", b"%\x05"]))
def test_the_accelerator_says_whether_bytes_hold_a_stop_byte_as_the_pure_code_does(
    data: bytes, stop: bytes
) -> None:
    assert credential_shapes._holds is _speedups.holds  # built: CI's install compiles it
    assert _speedups.holds(data, stop) == credential_shapes._py_holds(data, stop)
    assert _speedups.holds(memoryview(data), stop) == credential_shapes._py_holds(data, stop)


@pytest.mark.parametrize("size", [1, 15, 16, 63, 64, 65, 128, 200])
def test_a_stop_byte_is_found_at_every_offset_and_a_byte_past_ascii_is_not_one(size: int) -> None:
    """64 bytes a step with AVX2 (the stop bytes looked up in one shuffle where their low halves
    differ, else compared one by one), 16 with SSE2, then one at a time: a stop byte is found
    wherever it stands; a byte past ASCII (which `plain` refuses) is no stop byte here."""
    for stop in (credential_shapes._ESCAPE_STARTS, b"%\x05\xe9"):  # (0x25 and 0x05: one low half)
        for at in range(size):
            for bad in stop:
                data = b"x" * at + bytes([bad]) + b"y" * (size - at - 1)
                assert _speedups.holds(data, stop) is True, (bad, at)
            assert _speedups.holds(b"x" * at + b"\xea\x15" + b"y" * (size - at - 1), stop) is False
    with pytest.raises(TypeError, match="holds"):
        _speedups.holds(b"x", b"12345")


def test_the_escape_search_finds_escapes_past_its_one_pass() -> None:
    text = b"a" * 100 + b"%2F" + b"b" * 100 + b"\\u0041" + b"&#115;"
    assert credential_shapes._find_escapes(text) == [100, 203, 209]
    assert credential_shapes._find_escapes(b"c" * 300 + "é".encode()) == []

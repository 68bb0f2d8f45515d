"""Timing policies: when each replayed chunk is due."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
from ssemock import timing
from ssemock.framing import accelerator


def test_instant_delivers_everything_at_once() -> None:
    assert timing.instant.at(0.0) is None
    assert timing.instant.at(12.5) is None
    assert timing.instant.name == "instant" == str(timing.instant)
    assert timing.instant.factor is None


def test_recorded_keeps_recorded_times() -> None:
    assert timing.recorded.at(0.0) == 0.0
    assert timing.recorded.at(1.25) == 1.25
    assert timing.recorded.name == "recorded"
    assert timing.recorded.factor == 1.0


def test_scaled() -> None:
    half = timing.scaled(0.5)
    assert half.at(2.0) == 1.0
    assert half.at(0.0) == 0.0
    assert half.name == "scaled:0.5" == str(half)
    assert timing.scaled(0).at(5.0) == 0.0
    assert timing.scaled(3).at(0.5) == 1.5
    assert timing.scaled(2).name == "scaled:2"
    assert isinstance(timing.scaled(2).factor, float)


@settings(max_examples=100, deadline=None)
@given(st.floats(0, 1e3), st.floats(0, 1e4))
def test_scaled_multiplies(factor: float, t: float) -> None:
    assert timing.scaled(factor).at(t) == pytest.approx(t * factor)
    assert timing.get(factor).at(t) == pytest.approx(t * factor)


@pytest.mark.parametrize(
    "spec,name,at2",
    [
        ("instant", "instant", None),
        ("recorded", "recorded", 2.0),
        ("scaled:0.5", "scaled:0.5", 1.0),
        ("scaled:2", "scaled:2", 4.0),
        ("scaled:0", "scaled:0", 0.0),
        (2.0, "scaled:2", 4.0),
        (0.25, "scaled:0.25", 0.5),
        (3, "scaled:3", 6.0),
        (None, "instant", None),
    ],
)
def test_get(spec: object, name: str, at2: float | None) -> None:
    t = timing.get(spec)  # type: ignore[arg-type]
    assert t.name == name
    assert t.at(2.0) == at2
    assert timing.get(t.name).name == name  # names round-trip
    assert timing.get(t) is t


def test_get_returns_the_singletons() -> None:
    assert timing.get("instant") is timing.instant
    assert timing.get("recorded") is timing.recorded
    assert timing.get(None) is timing.instant


@pytest.mark.parametrize(
    "spec", ["fast", "scaled", "scaled:", "scaled:abc", "scaled:-1", "Instant", "", "scale:2"]
)
def test_get_unknown_raises_value_error(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        timing.get(spec)
    for known in ("instant", "recorded", "scaled"):
        assert known in str(info.value)


@pytest.mark.parametrize("factor", [-1, -0.001])
def test_negative_factor_is_rejected(factor: float) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        timing.scaled(factor)
    with pytest.raises(ValueError):
        timing.get(factor)


@pytest.mark.parametrize("spec", [float("nan"), "scaled:nan"])
def test_nan_factor_is_rejected(spec: object) -> None:
    with pytest.raises(ValueError):
        timing.get(spec)  # type: ignore[arg-type]


def test_timing_is_reachable_from_the_package() -> None:
    assert ssemock.timing is timing


def loop_longest_silence(times: list[float]) -> tuple[float, int] | None:
    """The reference: the first longest gap between successive times, the first from 0.0."""
    best: tuple[float, int] | None = None
    last = 0.0
    for index, at in enumerate(times):
        if best is None or at - last > best[0]:
            best = (at - last, index)
        last = at
    return best


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(), st.sampled_from([0.0, 0.5, 2.0, -0.0]), st.integers(-3, 3)),
        max_size=40,
    )
)
def test_the_longest_silence_is_the_loop_s_with_or_without_the_accelerator(times: list[float]) -> None:
    """The accelerator's pass (a list of floats), the pure loop (any other sequence, or a list
    holding an int) and the reference give the same silence, ties to the first, NaN and
    infinities included."""
    expected = repr(loop_longest_silence(times))
    assert repr(timing.longest_silence(times)) == repr(timing.longest_silence(tuple(times))) == expected
    if accelerator.longest_gap is not None and times:
        found = accelerator.longest_gap(times)
        floats = all(type(t) is float for t in times)
        assert repr(found) == (expected if floats else "None")


def test_the_accelerator_finds_the_longest_silence() -> None:
    assert accelerator.longest_gap is not None  # the install builds it
    assert accelerator.longest_gap([0.0, 0.5, 3.5, 3.5, 6.5]) == (3.0, 2)
    with pytest.raises(TypeError, match="longest_gap"):
        accelerator.longest_gap([])

"""ssemock.store.dumping: a recorder's chunk map, checked and laid out by the C accelerator's
``chunk_map`` in one pass, is byte for byte what the pure code makes of it; what the pure code
would refuse or round differently, the accelerator leaves to it."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from seeded import seeded, sized

from ssemock import Cassette
from ssemock.framing import _speedups
from ssemock.store import dumping
from ssemock.store.model import Interaction, Request, Response
from ssemock.store.parsing import _Invalid

NESTED = b"\n      "  # a chunk map's indent in a cassette file


def _map(rng: random.Random) -> tuple[list[int], list[Any], list[Any], int, bool]:
    """A recorder's tenths, the times and ends a response holds beside them and the body's size,
    and whether all is as a recording makes it: else one thing edited, as a hook may leave it or
    as no recording makes it (a time not its tenths', -0.0, tenths past a day or falling, an end
    repeated, zero, past the body, a bool, a float, a list too long)."""
    top = rng.choice([10, 10**4, 864_000_000, 864_000_001, 2**50])
    tenths = sorted(rng.choice([0, top, rng.randint(0, top)]) for _ in range(1 + sized(rng, 39)))
    times: list[Any] = [k / 10_000 for k in tenths]
    ends: list[Any] = sorted(rng.sample(range(1, 10 * len(tenths) + 2), len(tenths)))
    size = ends[-1]
    clean = top <= 864_000_000
    i = rng.randrange(len(tenths))
    edit = rng.randrange(12) if rng.random() < 0.6 else 0
    if edit == 1:
        times[i] = math.nextafter(times[i], math.inf)
    elif edit == 2:
        times[i] = -0.0 if tenths[i] == 0 else tenths[i] // 10_000
    elif edit == 3 and i:
        tenths[i], tenths[i - 1] = tenths[i - 1], tenths[i] + 1
    elif edit == 4 and i:
        ends[i] = ends[i - 1]
    elif edit == 5:
        ends[0] = 0
    elif edit == 6:
        size -= 1
    elif edit == 7:
        ends[0] = True if ends[0] == 1 else float(ends[0])
    elif edit == 8:
        times.append(times[-1])
    elif edit == 9:
        tenths[i] = float(tenths[i])
    elif edit == 10:
        size += 1
    elif edit == 11:
        times[i] = math.nan
    else:
        return tenths, times, ends, size, clean
    return tenths, times, ends, size, False


def _pure(tenths: list[int], times: list[Any], ends: list[Any], size: int) -> bytes:
    """The pure code's chunk map of a response holding these, laid out as a file has it."""
    response = Response(200, [], b"x" * size, ends, times, _tenths=tenths)
    saved, dumping._c_chunk_map = dumping._c_chunk_map, None
    try:
        return dumping._chunk_map_laid_out(dumping._chunks(response, lazy=True), NESTED)
    finally:
        dumping._c_chunk_map = saved


@settings(max_examples=400, deadline=None)
@given(drawn=seeded(_map))
def test_the_accelerated_chunk_map_is_the_pure_code_s_byte_for_byte(
    drawn: tuple[list[int], list[Any], list[Any], int, bool],
) -> None:
    tenths, times, ends, size, clean = drawn
    laid = _speedups.chunk_map(tenths, times, ends, size, NESTED)
    checked = _speedups.chunk_map(tenths, times, ends, size, None)
    assert (laid is None) == (checked is None) and checked in (None, b"")
    if clean:  # as a recording makes it: taken, never left to the pure code
        assert laid is not None
    try:
        pure = _pure(tenths, times, ends, size)
    except _Invalid:  # the pure code refuses it: so does the accelerator (then the pure code says why)
        assert laid is None
        return
    if laid is not None:
        assert laid == pure


def test_a_recording_is_saved_the_same_with_the_accelerator_and_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(7)
    tenths = sorted(rng.randint(0, 3_000_000) for _ in range(2_000))
    body = bytes(rng.randrange(32, 127) for _ in range(40_000))
    ends = [*sorted(rng.sample(range(1, len(body)), len(tenths) - 1)), len(body)]
    response = Response(200, [("content-type", "text/plain")], body, ends, [k / 10_000 for k in tenths])
    response._tenths = tenths
    cassette = Cassette([Interaction(Request("GET", "https://api.example.test/s"), response)])
    laid: list[bytes] = []

    def spy(*args: Any) -> bytes | None:
        out = _speedups.chunk_map(*args)
        laid.extend([out] if out else [])
        return out

    monkeypatch.setattr(dumping, "_c_chunk_map", spy)
    cassette.save(tmp_path / "c.json")
    monkeypatch.setattr(dumping, "_c_chunk_map", None)
    cassette.save(tmp_path / "p.json")
    accelerated, pure = (tmp_path / "c.json").read_bytes(), (tmp_path / "p.json").read_bytes()
    assert len(laid) == 1 and laid[0] in accelerated  # the accelerator laid the map out
    assert accelerated == pure
    loaded = Cassette.load(tmp_path / "c.json").interactions[0].response
    assert loaded.ends == ends and loaded.times == [k / 10 / 1000 for k in tenths]


def test_an_interaction_as_json_keeps_a_recorders_map_as_pairs() -> None:
    """The whole-document form (``lazy=False``, what orjson lays out: the reference of the
    layout tests) holds the ``[t_ms, end]`` pairs of a recorder's map too, not the accelerator's."""
    response = Response(200, [], b"abc", [1, 3], [0.0005, 0.0012], _tenths=[5, 12])
    item = dumping._interaction_to_json(Interaction(Request("GET", "https://api.example.test/s"), response))
    assert orjson.loads(orjson.dumps(item))["response"]["chunks"] == [[0.5, 1], [1.2, 3]]


def test_the_accelerator_is_in_use_and_refuses_bad_arguments() -> None:
    assert dumping._c_chunk_map is _speedups.chunk_map
    with pytest.raises(TypeError, match="chunk_map"):
        _speedups.chunk_map((1,), [0.0001], [1], 1, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="chunk_map"):
        _speedups.chunk_map([1], [0.0001], [1], 1, "\n")  # type: ignore[arg-type]

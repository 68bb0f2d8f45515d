"""The searches of a join of pieces none of which holds a shape anchor, made around its seams
(`ssemock.scan.seams`), against the searches of the whole join."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seeded import seeded, some

from ssemock.framing import _speedups
from ssemock.scan import credential_shapes, large_streams, seams
from ssemock.scan.walk import _Scan

KEY = "sk-ant-api03-" + "Q1w2E3r4T5y6U7i8O9p0" * 3

_SEAM_BITS = [KEY[:2], KEY[2:5], KEY[5:9], KEY[9:], "s", "k", "-", "sk-", "AI", "za", "ya29", ".", "\\", "%2"]
_SEAM_BITS += ["-----BEGIN ", "Bearer", " ", "gh", "p_", "AKIA", "x" * 20, "\n", "é"]
_SEAM_BITS += ["github_pa", "t_", "g", "ithub_pat_", "-----BEGI", "N"]  # the longest anchor split anywhere
_SEAM_BITS += ["%", "2F", "41", "\\u00", "\\u", "0041", "/", "&", "amp;", "&amp;#", "#115;"]  # escapes split


def _seam_piece(rng: random.Random) -> bytes:
    """Bits at both ends, most often a long middle between them (seams far apart: searched alone)."""
    middle = "y" * rng.choice([0, 5, 60, 60, 200])
    return ("".join(some(_SEAM_BITS, 4)(rng)) + middle + "".join(some(_SEAM_BITS, 4)(rng))).encode()


@settings(max_examples=300, deadline=None)
@given(
    seeded(lambda rng: [_seam_piece(rng) for _ in range(rng.randint(1, 40))]), st.booleans(), st.booleans()
)
def test_a_join_of_pieces_without_an_anchor_is_searched_at_its_seams_as_a_whole(
    pieces: list[bytes], clean: bool, large: bool
) -> None:
    """Pieces that hold no shape anchor (``clean``: nor an escape), joined: the searches of the
    bytes around each seam find what the searches of the whole join find (an anchor, or an escape,
    split across pieces; none lost, none more), and say there is none, cut from the pieces (bytes
    or views) unjoined, exactly when there is none; and a window of such pieces (``large``: past
    a MiB, as a window of a large stream, which may then not be joined at all) scanned with its
    seams finds what it finds without them."""
    hits = [credential_shapes.find_hits(p) for p in pieces]
    pieces = [
        p
        for p, (anchors, escapes) in zip(pieces, hits, strict=True)
        if not anchors and not (clean and escapes)
    ]
    if large:
        pieces.insert(len(pieces) // 2, b"y" * (1 << 20))
    joined = b"".join(pieces)
    ends = [sum(map(len, pieces[: k + 1])) for k in range(len(pieces) - 1)]
    assert seams.seam_hits(joined, ends, clean) == credential_shapes.find_hits(joined)
    if clean:
        views = [memoryview(p) if k % 2 else p for k, p in enumerate(pieces)]
        spans = seams._seam_spans(ends, len(joined), seams._REACH)
        none = spans is not None and credential_shapes.find_hits(joined) == ([], [])
        assert seams.seams_clear(views, ends) == none
    seamed, whole = _Scan(0), _Scan(0)
    large_streams._joined(
        large_streams.text_scan(seamed, "response.body"),
        "",
        b"data",
        pieces,
        [],
        (ends, clean, clean and large_streams._py_plain(pieces, b"=:\\")),
    )
    large_streams._joined(large_streams.text_scan(whole, "response.body"), "", b"data", pieces, [], None)
    assert seamed.found == whole.found


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=300), max_size=30),
    st.lists(st.integers(min_value=0, max_value=9000), max_size=40),
    st.integers(min_value=0, max_value=300),
    st.booleans(),
)
def test_the_accelerator_cuts_the_stretches_around_the_seams_the_pure_code_cuts(
    parts: list[bytes], ends: list[int], reach: int, views: bool
) -> None:
    """The accelerator's one pass gives the stretches (or None: the whole searched) the pure code
    gives, for parts as bytes or views, seams anywhere (inside a part too: a window's first part is
    its pieces before joined), some at the same place or past the end."""
    assert seams._stretches is _speedups.seam_stretches  # built: CI's install compiles it
    held: list[bytes | memoryview] = [memoryview(p) if views and k % 2 else p for k, p in enumerate(parts)]
    ends = sorted(ends)
    assert _speedups.seam_stretches(held, ends, reach) == seams._py_stretches(held, ends, reach)


def test_the_accelerator_refuses_seams_out_of_order() -> None:
    with pytest.raises(ValueError, match="in order"):
        _speedups.seam_stretches([b"x" * 100], [50, 10], 4)
    with pytest.raises(TypeError):
        _speedups.seam_stretches((b"x",), [1], 4)  # type: ignore[arg-type]

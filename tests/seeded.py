"""JSON-shaped test values built from one drawn seed, for the suite's property tests.

Hypothesis drawing every leaf, key and nesting step of a recursive strategy (and drawing again
when one went past its ``max_leaves``) was most of the CPU of the JSON property tests (issue 48
item 4). Here hypothesis draws a seed and a plain ``random.Random`` builds the value from it: the
same kinds of leaves, keys, sizes and depths, edge values often; the same seed builds the same
value (a failure names its seed), shrunk as a seed rather than leaf by leaf.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

Build = Callable[[random.Random], Any]

# edge values a number leaf takes about a third of the time (the rest: random ones)
EDGE_INTS = [0, 1, -1, 255, 2**31, 2**53, -(2**53) - 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64]
EDGE_FLOATS = [
    0.0,
    -0.0,
    0.1,
    -1.5,
    1e16,
    1e22,
    2.0**53 + 2,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
]
# characters a JSON string's escaping and a decoder's UTF-8 handling differ on, and plain ones
CHARS = 'ab z09"\\/{}[],:\x00\x01\x1f\x7f\t\n\r\x85\xa0\u2028\u2029\ufeff\ufffd\u00e9\u4e16\U0001f642'


def seeded(build: Build) -> st.SearchStrategy[Any]:
    """The values ``build`` makes from a drawn seed."""
    return st.integers(0, 2**64 - 1).map(lambda seed: build(random.Random(seed)))


def text(chars: str = CHARS, max_size: int = 12) -> Build:
    """Strings of up to ``max_size`` of ``chars``, empty about one time in five."""
    return lambda rng: "" if rng.random() < 0.2 else "".join(rng.choices(chars, k=rng.randint(1, max_size)))


def scalars(low: int, high: int, strings: Build) -> Build:
    """None, booleans, integers in ``low..high``, finite floats and ``strings``, edge values often."""
    ints = [i for i in EDGE_INTS if low <= i <= high]

    def build(rng: random.Random) -> Any:
        kind = rng.randrange(5)
        if kind == 0:
            return None
        if kind == 1:
            return rng.random() < 0.5
        edge = rng.random() < 0.3
        if kind == 2:
            return (
                rng.choice(ints)
                if edge
                else rng.randint(*rng.choice([(max(low, -999), min(high, 999)), (low, high)]))
            )
        if kind == 3:
            return rng.choice(EDGE_FLOATS) if edge else rng.uniform(-1, 1) * 10.0 ** rng.randint(-40, 40)
        return strings(rng)

    return build


def pick(values: Sequence[Any]) -> Build:
    """One of ``values``."""
    return lambda rng: rng.choice(values)


def nested(leaf: Build, key: Build, *, leaves: int, width: int) -> Build:
    """A leaf, or lists and objects (keys from ``key``) of up to ``width`` members each, nested,
    with at most ``leaves`` leaves in all (as hypothesis' ``recursive`` with ``max_leaves``)."""

    def build(rng: random.Random) -> Any:
        left = rng.randint(1, leaves)

        def value(depth: int) -> Any:
            nonlocal left
            if left <= 1 or rng.random() < 0.25 * (depth + 1):
                left -= 1
                return leaf(rng)
            members = []
            for _ in range(rng.randint(0, width)):
                if left <= 0:
                    break
                members.append(value(depth + 1))
            return members if rng.random() < 0.5 else {key(rng): member for member in members}

        return value(0)

    return build


def sized(rng: random.Random, max_size: int) -> int:
    """A collection's size up to ``max_size``: mostly small, as hypothesis draws them (mean about
    5, or half ``max_size`` if that is less), now and then any size up to ``max_size``."""
    if rng.random() < 0.05:
        return rng.randint(0, max_size)
    return min(max_size, int(rng.expovariate(1 / min(5.5, 0.5 * max_size + 0.5))))


def binary(max_size: int) -> Build:
    """Any bytes, ``sized`` of them."""
    return lambda rng: rng.randbytes(sized(rng, max_size))


def code_points(rng: random.Random, excluded: str = "") -> str:
    """A character: ASCII half the time, else from the rest of the BMP or past it (no surrogate,
    none of ``excluded``)."""
    while True:
        band = rng.random()
        if band < 0.5:
            char = chr(rng.randrange(0x80))
        elif band < 0.8:
            char = chr(rng.randrange(0x80, 0x10000))
        else:
            char = chr(rng.randrange(0x10000, 0x110000))
        if not ("\ud800" <= char <= "\udfff" or char in excluded):
            return char


def unicode_text(max_size: int, excluded: str = "") -> Build:
    """Any text (no surrogate, none of ``excluded``), ``sized`` characters of it."""
    return lambda rng: "".join(code_points(rng, excluded) for _ in range(sized(rng, max_size)))


def some(values: Sequence[Any], max_size: int) -> Build:
    """A list of ``sized`` of ``values``, each any of them."""
    return lambda rng: rng.choices(values, k=sized(rng, max_size))


def lists(item: Build, max_size: int) -> Build:
    """Lists of up to ``max_size`` items."""
    return lambda rng: [item(rng) for _ in range(rng.randint(0, max_size))]

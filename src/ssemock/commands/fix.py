"""``ssemock fix``: load a cassette whose boundary map disagrees with a hand-edited body, and
rebuild the maps that are wrong."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from ..store.cassette import (
    MAX_T_MS,
    Cassette,
    CassetteError,
    Interaction,
    body_ends,
    parse_interaction,
    read_file,
)
from ..store.parsing import read_parts


@dataclass
class Repair:
    """What `repair` did to one interaction (``changed`` False: it was fine)."""

    interaction: int
    changed: bool
    message: str


def _old_map(value: Any) -> list[tuple[float, int]]:
    """The well-formed ``[t_ms, end]`` pairs of a (possibly broken) boundary map (a time past
    ``MAX_T_MS`` is not one: the save would refuse it)."""
    if not isinstance(value, list):
        return []
    out = []
    for pair in value:
        if (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[1], int)
            and not isinstance(pair[1], bool)
            and isinstance(pair[0], (int, float))
            and not isinstance(pair[0], bool)
            and math.isfinite(pair[0])
            and pair[0] <= MAX_T_MS
        ):
            out.append((float(pair[0]), pair[1]))
    return out


def _repair_map(
    old: list[tuple[float, int]], body: bytes, content_type: str | None
) -> tuple[list[int], list[float], str]:
    """A boundary map for ``body`` from a broken ``old`` one: (ends, times in s, what was done)."""
    size = len(body)
    times_ms: list[float] = []
    for t, _ in old:  # made non-decreasing and >= 0
        times_ms.append(max(0.0, t, times_ms[-1] if times_ms else 0.0))
    old_size = old[-1][1] if old else None
    if not size:
        return [], [], "the body is empty: the map is now empty"
    if old_size is not None and old_size != size:
        ends = body_ends(body, content_type)
        n, count = len(times_ms), len(ends)
        times = [times_ms[math.ceil((k + 1) * n / count) - 1] / 1000 for k in range(count)]
        # the load error before it already says where the map and the body disagree: said once
        return (
            ends,
            times,
            (
                f"the body was edited: rebuilt the map with one chunk per event ({count} chunks, "
                f"was {len(old)}), "
                "times taken from the old map by event order"
            ),
        )
    ends, times = [], []
    for (_, e), t_ms in zip(old, times_ms):
        if 0 < e <= size and (not ends or e > ends[-1]):
            ends.append(e)
            times.append(t_ms / 1000)
    dropped = len(old) - len(ends)
    added = ""
    if not ends or ends[-1] != size:
        ends.append(size)
        times.append(times[-1] if times else 0.0)
        added = f", added a last boundary at byte {size}"
    if not old:
        return ends, times, f"no usable boundary map: one chunk of {size} bytes at t=0"
    return (
        ends,
        times,
        (
            f"kept {len(ends) - bool(added)} of {len(old)} boundaries (dropped {dropped} that did "
            f"not increase or fell outside the {size}-byte body{added})"
        ),
    )


def repair(raw: bytes | str, path: str | os.PathLike[str] | None = None) -> tuple[Cassette, list[Repair]]:
    """Load cassette JSON without trusting its boundary maps, rebuilding the ones that are wrong.

    Raises [`CassetteError`][ssemock.CassetteError] when the file cannot be repaired (not JSON, unknown version, an
    interaction broken in a way other than its boundary map).
    """
    items, stdio = read_parts(raw, path=path)
    interactions: list[Interaction] = []
    repairs: list[Repair] = []

    one = parse_interaction
    for i, item in enumerate(items):
        try:
            interactions.append(one(item))
            repairs.append(Repair(i, False, "ok"))
            continue
        except CassetteError as exc:
            first = exc.reason
        if not isinstance(item, dict) or not isinstance(item.get("response"), dict):
            raise CassetteError(first, path=path, interaction=i)
        response = item["response"]
        stripped = {**item, "response": {k: v for k, v in response.items() if k != "chunks"}}
        try:
            x = one(stripped)
        except CassetteError as exc:
            raise CassetteError(
                f"{exc.reason} (not a boundary-map problem: fix it by hand)", path=path, interaction=i
            ) from None
        ends, times, what = _repair_map(
            _old_map(response.get("chunks")), x.response.body, x.response.header("content-type")
        )
        x.response.ends, x.response.times = ends, times
        error = x.response.error
        if (
            error is not None
            and isinstance(error.get("at_byte"), int)
            and error["at_byte"] > len(x.response.body)
        ):
            x.response.error = {**error, "at_byte": len(x.response.body)}
        interactions.append(x)
        repairs.append(Repair(i, True, f"{first.split(' — ')[0]}; {what}"))
    return Cassette(interactions, path=path, stdio=stdio), repairs


def repair_file(path: str | os.PathLike[str]) -> tuple[Cassette, list[Repair]]:
    """`repair` on a file (CassetteError when it cannot be read)."""
    return repair(read_file(path), path)

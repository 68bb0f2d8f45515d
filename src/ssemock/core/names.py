"""One error for a misspelt name: what was given, the closest valid name, and all of them.

Used by chunkings, transforms, faults, matchers and record modes, so a typo anywhere reads the
same: ``unknown chunking 'mid_lin': did you mean 'mid_line'? valid: as_recorded, bytewise, ...``.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["suggest", "unknown"]


def suggest(name: object, known: Iterable[str]) -> str | None:
    """The known name closest to ``name`` (difflib's ratio >= 0.6), or None when none is close."""
    import difflib  # only when a name is wrong

    if not isinstance(name, str):
        return None
    choices = list(known)
    close = difflib.get_close_matches(name, choices, n=1)
    if not close:  # case slips ("Bytewise") and separators ("mid-line") count as close too
        folded = {c.lower().replace("-", "_"): c for c in choices}
        hit = folded.get(name.strip().lower().replace("-", "_"))
        return hit
    return close[0]


def unknown(
    kind: str,
    name: object,
    known: Iterable[str],
    *,
    shown: Iterable[str] | None = None,
    head: str | None = None,
) -> ValueError:
    """The ValueError for an unknown ``kind`` name: the closest of ``known`` and the list of
    valid names (``shown``, when the list to print differs, e.g. ``fixed:N`` for ``fixed``).

    ``head``: the part of ``name`` that names the thing (``"fixd"`` of ``"fixd:3"``); the rest is
    kept in the suggestion (``did you mean 'fixed:3'?``)."""
    known = list(known)
    if name == "all":  # a matrix's word, where one name is taken: say so, never "did you mean 'all'?"
        one = [n for n in (shown if shown is not None else known) if n != "all"]
        return ValueError(
            f"{kind} 'all' names every {kind} at once, for a matrix (the marker's or "
            f"--ssemock-{kind}=all); this takes one: {', '.join(one)}"
        )
    close = suggest(name if head is None else head, known)
    if close is not None and head is not None and isinstance(name, str):
        close += name.strip()[len(head) :]
    hint = f": did you mean {close!r}? " if close is not None else "; "
    return ValueError(
        f"unknown {kind} {name!r}{hint}valid: {', '.join(shown if shown is not None else known)}"
    )

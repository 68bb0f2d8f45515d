"""Nothing lost to a refusal or an interruption.

A recording the secret scan refuses, and one an interruption cuts short, is written beside the
cassette (``<name>.refused.json`` / ``<name>.partial.json``) with every secret masked the way
``ssemock redact`` masks it (`ssemock.commands.redact`), then scanned again like any save
(`ssemock.redaction.rules.find_secrets`): the paid call need not be made again, and no secret
reaches the folder. ``ssemock accept`` promotes a refused recording to the cassette.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..scan.messages import mask_text
from ..store.cassette import Cassette, Interaction
from ..store.stdio import StdioSession
from .rules import REDACTED, find_secrets

__all__ = [
    "PARTIAL",
    "REFUSED",
    "Kept",
    "beside",
    "keep_masked",
    "masked_copy",
    "masked_fields",
    "refused_target",
]

REFUSED = ".refused.json"
"""The suffix of a kept refused recording."""
PARTIAL = ".partial.json"
"""The suffix of a kept partial recording."""


def beside(path: str | os.PathLike[str], suffix: str) -> Path:
    """``cassettes/chat.json`` -> ``cassettes/chat<suffix>`` (``chat.refused.json``)."""
    path = Path(path)
    return path.with_name(path.stem + suffix)


def refused_target(path: str | os.PathLike[str]) -> Path:
    """The cassette a ``<name>.refused.json`` stands for: ``<name>.json`` beside it."""
    path = Path(path)
    if not path.name.endswith(REFUSED) or path.name == REFUSED:
        raise ValueError(
            f"{path} is not a refused recording (its name ends with {REFUSED!r} after the cassette's name)"
        )
    return path.with_name(path.name[: -len(REFUSED)] + ".json")


@dataclass
class Kept:
    """What [`keep_masked`][ssemock.redaction.keep.keep_masked] did: the file written (None when masking could not remove every
    secret: then nothing is written), what was masked and what was left, one line per field,
    never a value (``interaction 0 request.body: an OpenAI key (sk-...) at byte 12``)."""

    path: Path | None
    """The file written (`None`: nothing was, as a secret was left)."""
    masked: list[str] = field(default_factory=list)
    """What was masked, one line per field, never a value."""
    left: list[str] = field(default_factory=list)
    """The secrets masking could not remove, one line per field, never a value."""

    def describe(self, *, indent: str = "  ") -> str:
        """The masked fields (and any left) as indented lines, for a message."""
        lines = [f"{indent}masked: {line}" for line in self.masked]
        lines += [f"{indent}could not mask: {line}" for line in self.left]
        return "\n".join(lines)


def masked_copy(
    interactions: list[Interaction], path: Path | None = None, stdio: Sequence[StdioSession] = ()
) -> tuple[Cassette, list[str], list[str]]:
    """A copy of ``interactions`` (and of the child processes ``stdio``) with every secret masked
    the way ``ssemock redact`` masks it, what was masked, and what is still found after (a form
    masking cannot rewrite), one line per field, never a value; what is given is not changed."""
    from .scrub import redact  # the masking `ssemock redact` applies

    masked = Cassette(copy.deepcopy(interactions), path=path, stdio=copy.deepcopy(list(stdio)))
    changes = redact(masked)
    for k, session in enumerate(masked.stdio):
        changes += _mask_session(session, k)
    return masked, changes, find_secrets(masked)


def _mask_session(session: StdioSession, k: int) -> list[str]:
    """Mask the secrets of a child's command line and lines in place; what was masked."""
    changes = []
    for n, arg in enumerate(session.argv):
        if (new := mask_text(arg)) != arg:
            session.argv[n] = new
            changes.append(f"stdio[{k}].argv[{n}]")
    for n, line in enumerate(session.lines):
        text = line.data.decode("utf-8", "surrogateescape") if line.data is not None else ""
        if (new := mask_text(text)) != text:
            line.data = new.encode("utf-8", "surrogateescape")
            changes.append(f"stdio[{k}].lines[{n}]")
    return changes


def keep_masked(
    interactions: list[Interaction], path: str | os.PathLike[str], stdio: Sequence[StdioSession] = ()
) -> Kept:
    """Write ``interactions`` (and the child processes ``stdio``) to ``path`` (atomically) with
    every secret masked; what is given is not changed. Nothing is written when a secret is still
    found after masking (a form ``ssemock redact`` cannot rewrite): [`Kept.left`][ssemock.redaction.keep.Kept.left] says where."""
    masked, changes, left = masked_copy(interactions, Path(path), stdio)
    if left:
        return Kept(None, changes, left)
    return Kept(masked.save(path, scan_secrets=False), changes, [])  # scanned just above


_REDACTED = re.compile(re.escape(REDACTED))


def masked_fields(cassette: Cassette) -> list[str]:
    """Every field of ``cassette`` holding ``REDACTED``, one line each with how many times
    (what a masked recording hides: shown before it is accepted)."""
    out = []
    for i, x in enumerate(cassette.interactions):
        req, resp = x.request, x.response
        fields: list[tuple[str, str | bytes]] = [("request.url", req.url)]
        fields += [(f"request.headers[{k!r}]", v) for k, v in req.headers]
        fields += [("request.body", req.body or b"")]
        fields += [(f"response.headers[{k!r}]", v) for k, v in resp.headers]
        fields += [("response.body", resp.body)]
        for where, value in fields:
            text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
            count = len(_REDACTED.findall(text))
            if count:
                out.append(f"interaction {i} {where}: {count} x {REDACTED}")
    return out

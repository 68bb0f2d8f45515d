"""The values a migration plans, shared by [`ssemock.commands.migrate`][ssemock.commands.migrate] (the plan, cassettes, ini
files) and its libcst rewriter: findings, cassette jobs, file edits, and the record-mode and
cassette-name mappings from vcrpy / pytest-recording to ssemock."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

__all__ = ["BODY_COMMENT", "MODES", "CassetteJob", "Edit", "Finding", "literal_host", "ssemock_name"]

MODES = {
    "none": "none",
    "once": "once",
    "new_episodes": "new_episodes",
    "all": "all",
    "rewrite": "rewrite",
    "any": "new_episodes",
}
BODY_COMMENT = (
    "# vcrpy's matchers, carried over by `ssemock migrate`: vcrpy does not match the request body.",
    '# ssemock can (add "body", or migrate with --match-body): then a test whose code no longer',
    "# sends the request its cassette recorded fails instead of passing on a stale cassette.",
    "# allowed_hosts=[]: as under vcrpy, a request no interaction matches fails, even to loopback",
    "# (ssemock's default lets it through to a local service; vcrpy's ignore_hosts is ssemock's too).",
)


@dataclass(frozen=True)
class Finding:
    """Something the migration could not (or did not fully) convert, with where it is."""

    path: Path
    """The file it is in."""
    line: int | None
    """The line in that file (`None` for the whole file)."""
    message: str
    """What was found, and what to do about it."""

    def __str__(self) -> str:
        return f"{self.path}{f':{self.line}' if self.line else ''}: {self.message}"


@dataclass(frozen=True)
class CassetteJob:
    """vcrpy cassette(s) to convert into one ssemock cassette (several: pytest-recording's extra
    cassettes of a marker, which the test read together)."""

    sources: tuple[Path, ...]
    """The vcrpy cassette files converted into this one."""
    target: Path
    """The ssemock cassette written."""


@dataclass
class Edit:
    """A text file's content before (None: a new file) and after the migration."""

    path: Path
    before: str | None
    after: str


def ssemock_name(stem: str) -> str:
    """The file name ssemock's plugin gives the test that pytest-recording named ``stem``."""
    from ...plugin import cassette_name

    return cassette_name(SimpleNamespace(name=stem))


def literal_host(pattern: str) -> str | None:
    """A pytest-recording allowed_hosts regex that names one host, as that host (else None)."""
    text = (
        pattern.strip().replace("\\\\", "\\").removeprefix("^").removesuffix("$").replace(r"\.", ".")
    )  # TOML: \\.
    return text if re.fullmatch(r"[A-Za-z0-9.:-]+", text) else None

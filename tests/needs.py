"""What a test needs from the machine beyond the dev venv (a browser, Node with tests/node's
packages, a side environment): when it is absent, the test fails in CI, whose .ci/run installs
each, and elsewhere skips saying how to get it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

CHROMIUM = "/usr/bin/chromium"
NODE_MODULES = Path(__file__).resolve().parent / "node" / "node_modules"


def missing(why: str) -> NoReturn:
    """Stop the test: a failure in CI, a skip elsewhere, ``why`` saying what to install."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def chromium(use: str) -> str:
    """Debian's Chromium, for ``use`` (what the test does with it, named in the message)."""
    if not os.path.exists(CHROMIUM):
        missing(f"{CHROMIUM} is missing: {use} needs Debian's chromium (apt-get install -y chromium)")
    return CHROMIUM


def node(package: str = "openai") -> str:
    """Node, with tests/node's packages installed (``package`` among them)."""
    found = shutil.which("node")
    if found is None or not (NODE_MODULES / package).is_dir():
        missing("node and tests/node/node_modules are needed: npm ci --prefix tests/node (.ci/run does it)")
    return found

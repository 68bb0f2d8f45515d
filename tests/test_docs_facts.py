"""The facts the README and the guides state about the registries cannot drift from them: every
registered protocol is in the README's list of reference accumulators, and the counts quoted
(conformance cases, the matrix's chunkings and transforms) are the registries' own. (The
protocols guide's table is generated from the registry: tests/test_registry_tables.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import ssemock
from ssemock import chunking, conformance, protocols, transforms

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_lists_every_reference_accumulator() -> None:
    found = re.search(r"reference\s+accumulators \(`ssemock\.accumulate`: (.*?);", README, re.S)
    assert found, "README: the sentence listing the reference accumulators is gone"
    listed = re.findall(r"`([a-z0-9_.]+)`", found[1])
    assert listed == list(protocols.names()), "README's accumulator list vs the registry (in its order)"


def test_the_counts_quoted_are_the_registries() -> None:
    cases = re.search(r"is a corpus of (\d+) named cases", README)
    assert cases and int(cases[1]) == len(conformance.cases())
    matrix = re.search(r"# (\d+) chunkings x (\d+) transform choices", README)
    assert matrix and (int(matrix[1]), int(matrix[2])) == (len(chunking.ALL), 1 + len(transforms.ALL))
    assert ssemock.conformance is conformance


def test_the_readmes_proxy_example_is_what_the_node_quickstart_runs() -> None:
    """The README's proxy example is the Node quickstart's (which the docs test runs against a
    loopback stand-in): the same proxy command, and an app run with the same base URL."""
    example = re.search(r"```bash\n(ssemock proxy .*?)```", README, re.S)
    assert example, "README: the ssemock proxy example is gone"
    proxy, app = (line.split("  #")[0].strip() for line in example[1].strip().splitlines())
    quickstart = (ROOT / "docs" / "quickstart-node.md").read_text(encoding="utf-8")
    assert proxy in quickstart
    assert proxy.replace("https://api.openai.com", "http://127.0.0.1:8767") in quickstart
    base, command = app.split(" ", 1)
    assert any(line.startswith(base) and command in line for line in quickstart.splitlines()), app

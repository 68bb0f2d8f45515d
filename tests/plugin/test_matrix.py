"""``transform="sse"`` runs every transform that can rewrite an SSE body and none of the JSON-lines
and JSON-array layouts, which ``transform="all"`` runs and an SSE cassette can only skip (its runs
are fixed at collection, before a recording run has the cassette, so "all" cannot leave them out)."""

from __future__ import annotations

import pytest

import ssemock
from ssemock.variants import transforms

BODY = b'data: {"t": "caf\\u00e9"}\n\ndata: {"t": "2"}\n\n'
TEST = """
import httpx, pytest

@pytest.mark.ssemock(transform={spec!r})
def test_x():
    assert "caf" in httpx.get("https://api.example.test/s").text
"""


def test_the_sse_set_runs_only_what_can_rewrite_sse(pytester: pytest.Pytester) -> None:
    c = ssemock.Cassette()
    c.add("GET", "https://api.example.test/s", [BODY], headers={"content-type": "text/event-stream"})
    c.save(pytester.path / "cassettes" / "test_m" / "test_x.json")
    pytester.makepyfile(test_m=TEST.format(spec="sse"))
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-v")
    sse = [t for t in transforms.ALL if "sse" in t.kinds]
    assert [t.name for t in transforms.SETS["sse"]] == [t.name for t in sse]
    changes = [t for t in sse if transforms.applies(t, BODY, "sse")]
    result.assert_outcomes(passed=1 + len(changes), skipped=len(sse) - len(changes))  # body-dependent only
    layouts = [f"+{t.name}]" for t in transforms.ALL if "sse" not in t.kinds]
    assert len(layouts) == 5
    shown = [run for run in layouts if run in result.stdout.str()]
    assert shown == []  # "all" runs these five, and an SSE cassette skips each

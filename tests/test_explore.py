"""ssemock.explore and ssemock.strategies.variants: a search over drawn variants of a cassette's
streams, run against the user's own code, shrunk to the smallest failing variant and remembered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings

import ssemock
from ssemock import chunking, strategies, synth, transforms
from ssemock.explore import _MANY, Coverage, Failure, budget, search

MATCH = ["method", "path"]
CASSETTE = synth.openai_chat("こんにちは世界, hello there 🌏", seed=11)
CLIENT = httpx.Client()  # one client for every example: what is measured is ssemock and the decoder


def _text(events: Any) -> str:
    text = ""
    for data in events:
        if data != "[DONE]":
            text += json.loads(data)["choices"][0]["delta"].get("content") or ""
    return text


def _naive(player: ssemock.Player) -> None:
    """Decodes each network chunk on its own (a character split between chunks raises)."""
    body = ""
    with CLIENT.stream("POST", synth.OPENAI_CHAT_URL, json={}) as response:
        for chunk in response.iter_bytes():
            body += chunk.decode()
    player.assert_text(_text(p[6:] for p in body.split("\n\n") if p.startswith("data: ")))


def _whatwg(player: ssemock.Player) -> None:
    with CLIENT.stream("POST", synth.OPENAI_CHAT_URL, json={}) as response:
        player.assert_text(_text(e.data for e in ssemock.sse.iter_decode(response.iter_bytes())))


def _explore(run: Any, **options: Any) -> Failure | None:
    options.setdefault("database", False)
    options.setdefault("seed", 3)
    return ssemock.explore(CASSETTE, run, options.pop("examples", 60), match_on=MATCH, **options)


def test_explore_shrinks_a_naive_decoder_to_one_boundary_inside_a_character() -> None:
    failure = _explore(_naive)
    assert failure is not None
    assert len(failure.variant.chunking.boundaries) == 1  # shrunk to the one boundary that matters
    assert "UnicodeDecodeError" in str(failure) and "-byte character" in failure.boundaries[0]
    assert failure.reproducer == f'@pytest.mark.ssemock(chunking="{failure.variant.chunking.name}")'
    # the reproducer's options replay the same failure, and the name parses back
    assert chunking.get(failure.variant.chunking.name) == failure.variant.chunking
    with ssemock.replay(CASSETTE, match_on=MATCH, **failure.variant.options()) as player:  # type: ignore[arg-type]
        with pytest.raises(UnicodeDecodeError):
            _naive(player)


def test_a_conforming_decoder_passes_every_drawn_variant() -> None:
    assert _explore(_whatwg, transforms="all") is None


def test_explore_runs_a_coroutine_function() -> None:
    async def naive(player: ssemock.Player) -> None:
        body = ""
        async with httpx.AsyncClient() as client:
            async with client.stream("POST", synth.OPENAI_CHAT_URL, json={}) as response:
                async for chunk in response.aiter_bytes():
                    body += chunk.decode()
        player.assert_text(_text(p[6:] for p in body.split("\n\n") if p.startswith("data: ")))

    failure = _explore(naive)
    assert failure is not None and isinstance(failure.error, UnicodeDecodeError)


def _lenient(player: ssemock.Player) -> None:
    with CLIENT.stream("POST", synth.OPENAI_CHAT_URL, json={}) as response:
        data = [e.data for e in ssemock.sse.iter_decode(response.iter_bytes())]
    player.assert_text(_text(d for d in data if d != "[DONE]"))


def _strict(player: ssemock.Player) -> None:
    with CLIENT.stream("POST", synth.OPENAI_CHAT_URL, json={}) as response:
        data = [e.data for e in ssemock.sse.iter_decode(response.iter_bytes())]
    if not data or data[-1] != "[DONE]" or data.count("[DONE]") != 1:
        raise ConnectionError("the stream did not end with exactly one data: [DONE]")
    player.assert_text(_text(data[:-1]))


def test_with_faults_the_client_must_reject_a_cut_stream() -> None:
    failure = _explore(_lenient, faults=True)
    assert failure is not None and failure.variant.fault is not None
    assert "accepted a stream a conforming client must reject" in str(failure.error)
    assert failure.variant.fault.name in failure.reproducer
    assert _explore(_strict, faults=True) is None


def test_a_failing_variant_is_remembered_and_tried_first(tmp_path: Path) -> None:
    first = _explore(_naive, database=tmp_path, key="k", seed=None, derandomize=False)
    assert first is not None and any(tmp_path.iterdir())
    again = _explore(_naive, database=tmp_path, key="k", seed=None, derandomize=False)
    assert again is not None and again.examples == 1  # the stored variant, replayed before any new draw
    assert again.reproducer == first.reproducer


def test_coverage_counts_hazard_classes_and_transforms() -> None:
    seen: list[Coverage] = []
    with ssemock.replay(CASSETTE, match_on=MATCH) as player:
        failure, coverage = search(player, lambda: _whatwg(player), examples=40, seed=1, transforms="network")
    seen.append(coverage)
    assert failure is None and coverage.examples == 40
    assert coverage.hazards["utf8-3"] > 0 and coverage.hazards["data-prefix"] > 0
    assert set(coverage.transforms) <= {t.name for t in transforms.NETWORK}
    assert "utf8-3" in coverage.report() and "transforms drawn" in coverage.report()


@settings(max_examples=15, deadline=None, database=None)
@given(variant=strategies.variants(CASSETTE, transforms="all", faults=False))
def test_variants_are_replay_options(variant: strategies.Variant) -> None:
    """A drawn variant replays through ssemock.replay, and the reference events do not change
    (transforms keep what a conforming decoder yields)."""
    with ssemock.replay(CASSETTE, match_on=MATCH, **variant.options()) as player:  # type: ignore[arg-type]
        _whatwg(player)
        assert [e.data for e in player.expected.events] == [
            e.data for e in ssemock.sse.decode(CASSETTE.interactions[0].response.chunks)
        ]


def test_hazards_name_each_class() -> None:
    body = "\ufeffevent: x\r\ndata: é世🌏\r\n\r\ndata: 2\r\n\r\n".encode()
    found = strategies.hazards(body)
    assert found["bom"] == [1, 2, 3]
    assert set(found) >= {"utf8-2", "utf8-3", "utf8-4", "cr|lf", "field", "data-prefix", "event-end"}
    crlf = body.index(b"\r\n") + 1
    assert crlf in found["cr|lf"] and "between the CR and LF" in strategies.describe_boundary(body, crlf)
    assert strategies.classify(found, [crlf, 40, 41, 42])[-1] == "1-byte run"


def test_transform_sets_are_matrix_names() -> None:
    assert transforms.alternatives("network") == [[], *([t] for t in transforms.NETWORK)]
    assert transforms.alternatives("conforming") == [[], *([t] for t in transforms.CONFORMING)]
    assert len(transforms.alternatives("all")) == len(transforms.ALL) + 1
    assert {t.name for t in transforms.NETWORK} | {t.name for t in transforms.CONFORMING} == {
        t.name for t in transforms.ALL
    }  # every transform is in exactly one set
    assert not {t.name for t in transforms.NETWORK} & {t.name for t in transforms.CONFORMING}
    # explore's pools: the network set by default, conforming widens it
    assert strategies.transform_pool("network") == list(transforms.NETWORK)
    assert strategies.transform_pool("conforming") == [*transforms.NETWORK, *transforms.CONFORMING]
    assert [t.name for t in strategies.transform_pool(["crlf", "network"])] == [
        "crlf",
        *(t.name for t in transforms.NETWORK),
    ]


@pytest.mark.parametrize(
    "value, expected",
    [(200, (200, None)), ("50", (50, None)), ("30s", (_MANY, 30.0)), ("2m", (_MANY, 120.0))],
)
def test_budget(value: object, expected: tuple[int, float | None]) -> None:
    assert budget(value) == expected


@pytest.mark.parametrize("value", [0, -3, "soon", True, None, "0s"])
def test_a_bad_budget_says_what_explore_takes(value: object) -> None:
    with pytest.raises(ValueError, match="number of examples"):
        budget(value)


def test_in_ci_the_search_is_derandomized(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    runs = [_explore(_naive, seed=None, key="same test") for _ in range(2)]
    assert runs[0] is not None and runs[1] is not None
    assert runs[0].seed == runs[1].seed and runs[0].reproducer == runs[1].reproducer
    other = _explore(_naive, seed=None, key="another test")
    assert other is not None and other.seed != runs[0].seed  # seeded by the test's key
    # asked otherwise: random again
    assert _explore(_naive, seed=None, key="same test", derandomize=False).seed != runs[0].seed  # type: ignore[union-attr]


def test_explore_searches_a_binary_eventstream_too() -> None:
    """Bedrock's AWS eventstream: a decoder that takes each read for whole frames breaks at the
    first boundary inside a frame; the reference decoder survives every drawn cut."""
    from ssemock.chunking import get
    from ssemock.commands.rechunk import rechunk
    from ssemock.framing import eventstream
    from ssemock.protocols import bedrock

    cassette = bedrock.synthesize("Hello from Bedrock, 世界!", chunk_size=3)
    rechunk(cassette, get("per_event"))  # whole frames as recorded: explore runs that first, and it passes
    request = cassette.interactions[0].request

    def frames(player: ssemock.Player, whole_reads: bool) -> None:
        with httpx.Client() as client, client.stream("POST", request.url, json=request.json()) as response:
            chunks = list(response.iter_raw())
        got = (
            [f for c in chunks for f in eventstream.decode([c])]
            if whole_reads
            else eventstream.decode(chunks)
        )
        assert len(got) == len(player.expected.events)

    assert ssemock.explore(cassette, lambda p: frames(p, False), examples=50, database=False, seed=1) is None
    failure = ssemock.explore(cassette, lambda p: frames(p, True), examples=50, database=False, seed=1)
    assert failure is not None and failure.variant.marker().startswith('@pytest.mark.ssemock(chunking="at:')
    assert len(failure.boundaries) == 1  # shrunk to the one boundary inside a frame

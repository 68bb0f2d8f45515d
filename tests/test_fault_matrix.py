"""Every fault in every framing through every client stack: the bytes served, the client's
exception, what ``plays[i].faults`` reports, or a refusal naming fault and framing.

The axes come from the registries (:data:`ssemock.faults.VARIANTS`, :func:`ssemock.framing.all_framings`
with each framing's ``example`` body, :data:`ssemock.stacks.STACKS`), so a new fault, framing or
stack is a new row here; the guards below fail when one lacks what the matrix needs to run it
(an oracle for a fault, an example body for a framing, a client for a stack).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
import httpx
import httpx2
import orjson
import pytest
import urllib3

import ssemock
from ssemock import faults, framing, stacks

URL = "https://api.example.test/v1/stream"
READ_TIMEOUT = 5.0  # the stall variant waits longer: the client's ReadTimeout at once, no sleeping
Received = tuple[int, bytes, BaseException | None]


# -- one client per stack and mode: read the whole body, keep the exception ---------------------


def _httpx_like(module: Any) -> Callable[[], Received]:
    def sync() -> Received:
        got = bytearray()
        with (
            module.Client(timeout=READ_TIMEOUT) as client,
            client.stream("POST", URL, content=b"{}") as response,
        ):
            try:
                for chunk in response.iter_bytes():
                    got += chunk
            except Exception as exc:
                return response.status_code, bytes(got), exc
            return response.status_code, bytes(got), None

    return sync


def _httpx_like_async(module: Any) -> Callable[[], Received]:
    async def read() -> Received:
        got = bytearray()
        async with (
            module.AsyncClient(timeout=READ_TIMEOUT) as client,
            client.stream("POST", URL, content=b"{}") as response,
        ):
            try:
                async for chunk in response.aiter_bytes():
                    got += chunk
            except Exception as exc:
                return response.status_code, bytes(got), exc
            return response.status_code, bytes(got), None

    return lambda: asyncio.run(read())


def _aiohttp() -> Received:
    async def read() -> Received:
        got = bytearray()
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_read=READ_TIMEOUT)) as session,
            session.post(URL, data=b"{}") as response,
        ):
            try:
                async for chunk in response.content.iter_any():
                    got += chunk
            except Exception as exc:
                return response.status, bytes(got), exc
            return response.status, bytes(got), None

    return asyncio.run(read())


def _urllib3() -> Received:
    got = bytearray()
    response = urllib3.PoolManager().request(
        "POST",
        URL,
        body=b"{}",
        preload_content=False,
        retries=False,
        timeout=urllib3.Timeout(connect=READ_TIMEOUT, read=READ_TIMEOUT),
    )
    try:
        for chunk in response.stream(1024):
            got += chunk
    except Exception as exc:
        return response.status, bytes(got), exc
    finally:
        response.release_conn()
    return response.status, bytes(got), None


#: stack -> mode -> client; the exceptions each stack's client raises for a dropped connection
#: and for a read timeout
CLIENTS: dict[str, dict[str, Callable[[], Received]]] = {
    "httpx": {"sync": _httpx_like(httpx), "async": _httpx_like_async(httpx)},
    "httpx2": {"sync": _httpx_like(httpx2), "async": _httpx_like_async(httpx2)},
    "aiohttp": {"async": _aiohttp},
    "urllib3": {"sync": _urllib3},
}
RAISES: dict[str, dict[str, type[BaseException]]] = {
    "httpx": {"dropped": httpx.RemoteProtocolError, "timeout": httpx.ReadTimeout},
    "httpx2": {"dropped": httpx2.RemoteProtocolError, "timeout": httpx2.ReadTimeout},
    "aiohttp": {"dropped": aiohttp.ClientPayloadError, "timeout": aiohttp.ServerTimeoutError},
    "urllib3": {"dropped": urllib3.exceptions.ProtocolError, "timeout": urllib3.exceptions.ReadTimeoutError},
}
STACK_MODES = [(stack, mode) for stack in stacks.STACKS for mode in CLIENTS.get(stack, {"?": _urllib3})]


# -- what each fault must serve, from the original body and its event ends ----------------------

EXTRA = b'{"ssemock": "data after the terminator"}'
Want = tuple[int, bytes | Callable[[bytes], bool], str | None]  # status, bytes (or a check), exception kind


def _mid(ends: list[int]) -> int:
    starts = [0, *ends]
    k = max(len(starts) - 3, 0)
    return (starts[k] + starts[k + 1]) // 2


def _trailing(kind: str, body: bytes, ends: list[int]) -> bytes:
    return {
        "sse": body + b"data: " + EXTRA + b"\n\n",
        "ndjson": body + EXTRA + b"\n",
        "json_array": body + b"\n" + EXTRA + b"\n",
    }[kind]


def _garbage(kind: str, body: bytes, ends: list[int]) -> bytes:
    if kind == "sse":
        return body[: ends[-2]] + body[ends[-2] :].rstrip(b"\n") + b"garbage\n\n"
    if kind == "ndjson":
        return body[: ends[-1] - 1] + b"garbage\n"
    if kind == "json_array":
        return body[: ends[-1]] + b"garbage" + body[ends[-1] :]
    return body.rstrip() + b"garbage" + body[len(body.rstrip()) :]  # json


def _error_event(kind: str, body: bytes, ends: list[int]) -> Callable[[bytes], bool]:
    def check(served: bytes) -> bool:
        if not framing.get(kind).stream:  # a document: the error answer replaces it
            return "error" in orjson.loads(served) and "error" not in orjson.loads(body)
        events = framing.get(kind).decode(served)
        original = framing.get(kind).decode(body)
        return (
            served[: ends[0]] == body[: ends[0]]
            and len(events) == 2
            and events[0] == original[0]
            and "overloaded" in repr(events[1]).lower()
        )

    return check


def _json_error(status: int) -> Callable[[bytes], bool]:
    return lambda served: isinstance(orjson.loads(served), dict)


ORACLES: dict[str, Callable[[str, bytes, list[int], int], Want]] = {
    "disconnect:after_event=1": lambda kind, body, ends, attempt: (200, body[: ends[0]], "dropped"),
    "disconnect:after_byte=5": lambda kind, body, ends, attempt: (200, body[:5], "dropped"),
    # resumed by a client that reconnects with Last-Event-ID; these clients do not, so it drops
    "resume:after_event=1": lambda kind, body, ends, attempt: (200, body[: ends[0]], "dropped"),
    "stall:before_event=1,seconds=60": lambda kind, body, ends, attempt: (200, body[: ends[0]], "timeout"),
    "truncate": lambda kind, body, ends, attempt: (200, body[: ends[-2]], None),
    "truncate:at=mid_event": lambda kind, body, ends, attempt: (200, body[: _mid(ends)], None),
    "trailing_data": lambda kind, body, ends, attempt: (200, _trailing(kind, body, ends), None),
    "trailing_data:at=same_event": lambda kind, body, ends, attempt: (
        200,
        body[: ends[-2]] + b"data: [DONE]\ndata: " + EXTRA + b"\n\n",
        None,
    ),
    "trailing_data:at=garbage": lambda kind, body, ends, attempt: (200, _garbage(kind, body, ends), None),
    "http_error:status=429,retry_after=0": lambda kind, body, ends, attempt: (429, _json_error(429), None),
    "error_event:kind=overloaded_error,after_event=1": lambda kind, body, ends, attempt: (
        200,
        _error_event(kind, body, ends),
        None,
    ),
    "sequence:http_error:status=503|as_recorded": lambda kind, body, ends, attempt: (
        (503, _json_error(503), None) if attempt == 0 else (200, body, None)
    ),
}

FRAMINGS = [f.name for f in framing.all_framings()]


def _whole_events(kind: str, got: bytes) -> list[Any]:
    """What a conforming client gets from a stream cut short: its whole events."""
    ends = framing.get(kind).event_ends(got)
    return framing.get(kind).decode(got[: ends[-1]]) if ends else []


def _aimed(variant: str) -> str:
    """The variant aimed at interaction 0 (a plain JSON body takes a fault only when aimed)."""
    return variant + (",on=0" if ":" in variant else ":on=0")


def _cassette(kind: str) -> tuple[ssemock.Cassette, bytes]:
    example = framing.get(kind).example
    assert example is not None
    content_type, body = example
    cassette = ssemock.Cassette()
    cassette.add("POST", URL, [body], headers={"content-type": content_type})
    return cassette, body


def test_every_registered_fault_framing_and_stack_can_run_in_the_matrix() -> None:
    """A new fault needs an oracle, a new framing an example body, a new stack a client."""
    assert set(faults.VARIANTS) == set(ORACLES)
    assert {v.partition(":")[0] for v in faults.VARIANTS} >= {*faults._KNOWN}
    assert all(f.example is not None for f in framing.all_framings())
    assert set(stacks.STACKS) == set(CLIENTS) == set(RAISES)


@pytest.mark.parametrize("stack, mode", STACK_MODES, ids=[f"{s}-{m}" for s, m in STACK_MODES])
@pytest.mark.parametrize("kind", FRAMINGS)
@pytest.mark.parametrize("variant", faults.VARIANTS)
def test_fault_in_framing_through_stack(variant: str, kind: str, stack: str, mode: str) -> None:
    cassette, body = _cassette(kind)
    spec = _aimed(variant)
    fault = faults.get(spec)
    why = fault.refuses(kind) or fault.refuses_interaction(cassette.interactions[0])
    if why is not None:  # refused before any request, naming the fault, the framing and why
        with pytest.raises(ValueError) as refused:
            ssemock.replay(cassette, faults=spec).start()
        assert spec in str(refused.value) and f"a {kind} body: {why}" in str(refused.value)
        return
    ends = framing.get(kind).event_ends(body)
    with ssemock.replay(cassette, faults=spec, allow_playback_repeats=True) as player:
        for attempt in range(2):
            status, got, error = CLIENTS[stack][mode]()
            want_status, want_body, raises = ORACLES[variant](kind, body, ends, attempt)
            assert status == want_status
            assert got == want_body if isinstance(want_body, bytes) else want_body(got), got
            if raises is None:
                assert error is None, error
            else:
                assert isinstance(error, RAISES[stack][raises]), error
            changed = status != 200 or got != body or error is not None
            assert player.plays[attempt].faults == ([spec] if changed else [])
            expected = player.expected  # the reference never crashes on what was served
            cut = raises is not None or variant.startswith("truncate")
            assert expected.cut == cut
            if status == 200 and variant != "trailing_data:at=garbage":  # (garbage: the reference rejects it)
                assert expected.events == (_whole_events(kind, got) if cut else framing.get(kind).decode(got))


@pytest.mark.parametrize("kind", FRAMINGS)
@pytest.mark.parametrize("variant", faults.VARIANTS)
def test_unaimed_fault_with_no_meaning_for_the_cassette_is_refused(variant: str, kind: str) -> None:
    """Unaimed, a stream fault that has a meaning for no response of the cassette (a framing it
    refuses, a plain JSON body) fails the player before any request, naming the fault."""
    cassette, _ = _cassette(kind)
    fault = faults.get(variant)
    why = fault.refuses_interaction(cassette.interactions[0])
    if why is not None:  # a fault no response of it can take (resume: no event id to resume from)
        with pytest.raises(ValueError) as refused:
            ssemock.replay(cassette, faults=variant).start()
        assert variant in str(refused.value) and why in str(refused.value)
        return
    if fault.per_request or (framing.get(kind).stream and fault.refuses(kind) is None):
        with ssemock.replay(cassette, faults=variant):
            pass
        return
    with pytest.raises(ValueError, match="has a meaning for no response") as refused:
        ssemock.replay(cassette, faults=variant).start()
    assert variant in str(refused.value) and kind in str(refused.value)


# -- aiming: a cassette of a HEAD, a POST stream and a GET ----------------------------------------

BASE = "https://api.anthropic.com"


def _three() -> ssemock.Cassette:
    cassette = ssemock.Cassette()
    cassette.add("HEAD", f"{BASE}/", [])
    cassette.interactions.append(STREAM)
    cassette.add(
        "GET",
        f"{BASE}/v1/models",
        [b'{"data": [{"id": "claude-test"}]}'],
        headers={"content-type": "application/json"},
    )
    return cassette


STREAM = ssemock.synth.anthropic_messages("Hello from the stream", seed=3).interactions[0]


def _calls(client: httpx.Client) -> list[tuple[int, bytes, str | None]]:
    """HEAD, the streaming POST (read to its end or its error), then the GET."""
    out = [(client.head(f"{BASE}/").status_code, b"", None)]
    with client.stream("POST", f"{BASE}/v1/messages", content=STREAM.request.body) as response:
        got = bytearray()
        try:
            for chunk in response.iter_bytes():
                got += chunk
            error = None
        except httpx.HTTPError as exc:
            error = type(exc).__name__
        out.append((response.status_code, bytes(got), error))
    response = client.get(f"{BASE}/v1/models")
    out.append((response.status_code, response.content, None))
    return out


def test_an_http_error_aimed_at_the_stream_leaves_the_head_and_the_get_alone() -> None:
    cassette = _three()
    with (
        ssemock.replay(cassette, faults="http_error:status=429,on=POST */v1/messages") as player,
        httpx.Client() as client,
    ):
        (head, _, _), (post, body, _), (get, models, _) = _calls(client)
        assert (head, post, get) == (200, 429, 200)
        assert orjson.loads(body)["error"]["type"] == "rate_limit_error"  # Anthropic's own 429 body
        assert models == cassette.interactions[2].response.body
        assert [p.faults for p in player.plays] == [[], ["http_error:status=429,on=POST */v1/messages"], []]


def test_unaimed_http_error_answers_the_first_interaction_matched_and_only_it() -> None:
    with ssemock.replay(_three(), faults="http_error:status=503") as player, httpx.Client() as client:
        assert client.head(f"{BASE}/").status_code == 503
        assert client.head(f"{BASE}/").status_code == 503  # a retry matches it again: the same answer
        (head, _, _), (post, _, error), (get, _, _) = _calls(client)
        assert (head, post, error, get) == (503, 200, None, 200)
        assert player.plays[0].faults == ["http_error:status=503"] and player.plays[-1].faults == []


def test_an_unaimed_stream_fault_cuts_the_stream_and_leaves_the_head_and_the_plain_json_alone() -> None:
    cassette = _three()
    with ssemock.replay(cassette, faults="disconnect:after_event=2") as player, httpx.Client() as client:
        (head, _, _), (post, body, error), (get, models, _) = _calls(client)
        ends = framing.get("sse").event_ends(cassette.interactions[1].response.body)
        assert (head, post, error, get) == (200, 200, "RemoteProtocolError", 200)
        assert body == cassette.interactions[1].response.body[: ends[1]]
        assert models == cassette.interactions[2].response.body
        assert [p.faults for p in player.plays] == [[], ["disconnect:after_event=2"], []]


@pytest.mark.parametrize("on", [2, "2", "#2", "GET */v1/models", "/v1/models", "* /v1/models"])
def test_a_fault_aimed_by_index_or_pattern_reaches_the_plain_json_get(on: str | int) -> None:
    cassette = _three()
    fault = faults.disconnect(after_byte=4, on=on)
    with ssemock.replay(cassette, faults=[fault]) as player, httpx.Client() as client:
        client.head(f"{BASE}/")
        with pytest.raises(httpx.RemoteProtocolError), client.stream("GET", f"{BASE}/v1/models") as response:
            response.read()
        assert player.plays[-1].body == cassette.interactions[2].response.body[:4]
        assert player.plays[0].faults == []


def test_an_aimed_fault_name_round_trips_from_keyword_to_string() -> None:
    fault = faults.disconnect(after_event=2, on="POST */v1/messages")
    assert str(fault) == "disconnect:after_event=2,on=POST */v1/messages"
    again = faults.get(str(fault))
    assert (again.on, str(again)) == (fault.on, str(fault))
    assert str(faults.get("truncate:on=1")) == "truncate:on=1"
    sequence = faults.get("sequence:http_error:status=429|as_recorded,on=POST */v1/messages")
    assert sequence.on == faults.Target(method="POST", pattern="*/v1/messages")
    assert faults.get("sequence:http_error:status=429,on=1|as_recorded").on == faults.Target(index=1)


def test_an_aimed_sequence_counts_the_attempts_of_its_target_only() -> None:
    """429 then success for the stream, however many other requests come first."""
    cassette = _three()
    spec = "sequence:http_error:status=429|as_recorded,on=POST */v1/messages"
    with ssemock.replay(cassette, faults=spec) as player, httpx.Client() as client:
        assert [s for s, _, _ in _calls(client)] == [200, 429, 200]
        with client.stream("POST", f"{BASE}/v1/messages", content=STREAM.request.body) as response:
            assert (response.status_code, response.read()) == (200, cassette.interactions[1].response.body)
        assert [p.faults for p in player.plays] == [[], [spec], [], []]


@pytest.mark.parametrize("on", ["PUT */v1/messages", "*/v2/*", 7])
def test_a_target_that_matches_nothing_is_an_error_naming_it_and_the_requests(on: str | int) -> None:
    with pytest.raises(ValueError) as error:
        ssemock.replay(_three(), faults=[faults.truncate(on=on)]).start()
    message = str(error.value)
    assert f"target {str(on)!r} matches no interaction" in message
    assert (
        "#0 HEAD https://api.anthropic.com/" in message
        and "#2 GET https://api.anthropic.com/v1/models" in message
    )


def test_a_fault_aimed_at_a_framing_it_refuses_is_an_error_naming_both() -> None:
    with pytest.raises(
        ValueError,
        match=r"trailing_data:at=same_event,on=2 cannot apply to interaction #2 "
        r"\(GET https://api.anthropic.com/v1/models\).*a json body",
    ):
        ssemock.replay(_three(), faults="trailing_data:at=same_event,on=2").start()


@pytest.mark.parametrize(
    "on, says", [(-1, "index >= 0"), ("", "METHOD URL-PATTERN"), (1.5, "METHOD URL-PATTERN")]
)
def test_a_bad_target_is_one_value_error_when_parsed(on: Any, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        faults.disconnect(after_event=1, on=on)


def test_the_docs_table_shows_every_cell() -> None:
    """docs/guide/faults.md's table is generated (docs/hooks/fault_matrix.py) from the same
    registries: a row per fault variant, a column per framing, each refusal named."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "docs" / "hooks" / "fault_matrix.py"
    spec = importlib.util.spec_from_file_location("fault_matrix_hook", path)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    table = hook.render()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(faults.VARIANTS)
    assert table.splitlines()[0] == "| fault | " + " | ".join(FRAMINGS) + " |"
    for variant, row in zip(faults.VARIANTS, rows):
        cells = row.split(" | ")[1:]
        assert len(cells) == len(FRAMINGS)
        for kind, text in zip(FRAMINGS, cells):
            why = faults.get(variant).refuses(kind)
            assert ("**refused**" in text) == (why is not None) and text.strip(" |") != "unchanged"
    assert hook.MARKER in (Path(__file__).parents[1] / "docs" / "guide" / "faults.md").read_text()

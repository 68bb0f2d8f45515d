"""Ids a JSON-RPC client makes up (issue 45 item 1, a2a-sdk's random id per call): a replay
matches a request whatever its ids are, in-process and through ``ssemock serve``, and the answer
carries the ids this run's client sent, under every chunking; a body that differs elsewhere still
does not match; a batch's ids map one to one; an id inside a result is left as it is."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ssemock
from ssemock import Cassette, framing
from ssemock.commands.loopback import running
from ssemock.commands.serve import app
from ssemock.protocols import a2a

ID = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=40))


def _synth() -> Cassette:
    return a2a.synthesize("Sunny, 21 °C.", chunk_size=3, seed=5)


def _with_id(cassette: Cassette, ident: Any) -> bytes:
    [x] = cassette.interactions
    assert x.request.body is not None
    return json.dumps({**json.loads(x.request.body), "id": ident}).encode()


def _ids(body: bytes) -> set[Any]:
    return {json.loads(e.data)["id"] for e in framing.decode(body, "text/event-stream")}


@settings(max_examples=40, deadline=None)
@given(ident=ID, chunking=st.sampled_from(["as_recorded", "bytewise", "mid_utf8", "fixed:7"]))
def test_any_sent_id_matches_and_is_the_answers_id(ident: Any, chunking: str) -> None:
    cassette = _synth()
    [x] = cassette.interactions
    with ssemock.replay(cassette, chunking=chunking), httpx.Client() as client:
        body = client.post(x.request.url, content=_with_id(cassette, ident)).read()
    assert _ids(body) == {ident}
    recorded = ssemock.accumulate(framing.decode(x.response.body, "text/event-stream"), "a2a")
    served = ssemock.accumulate(framing.decode(body, "text/event-stream"), "a2a")
    assert (served.text, served.finish_reason) == (recorded.text, recorded.finish_reason)


def test_a_body_that_differs_elsewhere_does_not_match() -> None:
    cassette = _synth()
    [x] = cassette.interactions
    changed = json.loads(_with_id(cassette, "other"))
    changed["method"] = "SendStreamingMessage"
    with ssemock.replay(cassette), httpx.Client() as client:
        with pytest.raises(ssemock.UnmatchedRequestError, match=r"\$\.method"):
            client.post(x.request.url, json=changed)


def test_a_batch_maps_each_id_and_leaves_a_result_id_alone() -> None:
    cassette = Cassette()
    url = "http://rpc.local/mcp"
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "a"},
        {"jsonrpc": "2.0", "method": "note"},
        {"jsonrpc": "2.0", "id": 2, "method": "b"},
    ]
    answer = [
        {"jsonrpc": "2.0", "id": 1, "result": {"item": {"id": 2}}},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]
    cassette.add(
        "POST",
        url,
        [json.dumps(answer).encode()],
        request_json=batch,
        headers={"content-type": "application/json"},
    )
    sent = [{**batch[0], "id": "x-1"}, batch[1], {**batch[2], "id": "x-2"}]
    with ssemock.replay(cassette), httpx.Client() as client:
        got = client.post(url, json=sent).json()
    assert [m["id"] for m in got] == ["x-1", "x-2"]
    assert got[0]["result"] == {"item": {"id": 2}}  # not the id of a request: as recorded


def test_serve_answers_with_the_sent_id() -> None:
    cassette = _synth()
    [x] = cassette.interactions
    path = httpx.URL(x.request.url).raw_path.decode()
    with running(app(cassette, chunking="bytewise")) as base, httpx.Client() as client:
        body = client.post(base + path, content=_with_id(cassette, 4711)).read()
    assert _ids(body) == {4711}


@settings(max_examples=40, deadline=None)
@given(recorded=ID, sent=ID, chunking=st.sampled_from(["as_recorded", "bytewise", "mid_utf8", "fixed:5"]))
def test_a_listen_stream_carries_the_sent_id_in_every_frames_meta(
    recorded: Any, sent: Any, chunking: str
) -> None:
    """The mcp SDK names each subscriptions/listen request from a process-wide counter and routes
    the stream's frames by _meta["io.modelcontextprotocol/subscriptionId"]: whatever the recorded
    and the sent ids, the request matches and every frame's subscription id is the sent one (a
    notification's own members, and an id inside a result, as recorded)."""
    url = "http://127.0.0.1:8000/mcp"
    meta = {"io.modelcontextprotocol/subscriptionId": recorded}
    frames = [
        {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": meta}},
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"_meta": meta, "uri": "x://a"},
        },
        {"jsonrpc": "2.0", "id": recorded, "result": {"item": {"id": recorded}, "_meta": meta}},
    ]
    cassette = Cassette()
    cassette.add(
        "POST",
        url,
        [f"event: message\r\ndata: {json.dumps(f, ensure_ascii=False)}\r\n\r\n".encode() for f in frames],
        headers={"content-type": "text/event-stream"},
        request_json={"jsonrpc": "2.0", "id": recorded, "method": "subscriptions/listen", "params": {}},
    )
    request = {"jsonrpc": "2.0", "id": sent, "method": "subscriptions/listen", "params": {}}
    with ssemock.replay(cassette, chunking=chunking), httpx.Client() as client:
        body = client.post(url, json=request).read()
    got = [json.loads(e.data) for e in framing.decode(body, "text/event-stream")]
    assert [
        m.get("params", m.get("result"))["_meta"]["io.modelcontextprotocol/subscriptionId"] for m in got
    ] == [sent] * 3
    assert got[2]["id"] == sent and got[2]["result"]["item"] == {"id": recorded}
    assert got[1]["params"]["uri"] == "x://a"

"""A loopback stand-in for the Responses API's WebSocket mode with lanes (issue 44 item 3), written
with the ``websockets`` sync server: ``response.create(stream_id=...)`` runs a response on that
lane (lanes interleave, one event per running lane in turn), every event echoes its
``stream_id``; ``response.steer`` is accepted while its response runs (which then ends
``response.incomplete`` with reason ``steered`` and its successor starts on the same lane with
the steered input) and fails with ``response_not_active`` once it ended. A response whose input
says "steer me" waits after its first delta for the steer. Every server event is validated with
openai's own ``ResponsesServerEvent`` before it is sent."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pydantic
from openai.types.responses.responses_server_event import ResponsesServerEvent
from websockets.sync.server import ServerConnection

__all__ = ["lanes", "validated"]

_SERVER_EVENT: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ResponsesServerEvent)


def validated(event: dict[str, Any]) -> str:
    """The event as JSON, once openai's types take it as the event it says it is."""
    parsed = _SERVER_EVENT.validate_python(event)
    assert parsed.type == event["type"], (parsed.type, event)
    return json.dumps(event)


def _response(rid: str, status: str, output: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": 1764633600,
        "status": status,
        "model": "gpt-5",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        **extra,
    }


def _said(text: Any) -> str:
    if isinstance(text, str):
        return text
    return " ".join(str(part.get("content", "")) for part in text if isinstance(part, dict))


class _Run:
    """One response on a lane: its events, one at a time; it may wait for a steer."""

    def __init__(self, rid: str, lane: str | None, reply: str, *, steerable: bool) -> None:
        self.rid, self.lane, self.reply, self.steerable = rid, lane, reply, steerable
        self.waiting = False
        self.steered: str | None = None  # the steering input, once accepted
        self.events = self._events()

    def _events(self) -> Iterator[dict[str, Any]]:
        mid = f"msg_{self.rid}"
        yield {"type": "response.created", "response": _response(self.rid, "in_progress", [])}
        item = {"id": mid, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        yield {"type": "response.output_item.added", "output_index": 0, "item": item}
        words = self.reply.split(" ")
        for n, word in enumerate(words):
            delta = word if n == 0 else " " + word
            yield {
                "type": "response.output_text.delta",
                "item_id": mid,
                "output_index": 0,
                "content_index": 0,
                "delta": delta,
                "logprobs": [],
            }
            if n == 0 and self.steerable:
                self.waiting = True
                yield {}  # (nothing: waits here for the steer)
            if self.steered is not None:
                done = {"reason": "steered"}
                yield {
                    "type": "response.incomplete",
                    "response": _response(self.rid, "incomplete", [], incomplete_details=done),
                }
                return
        text = self.reply
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        yield {"type": "response.output_text.done", "item_id": mid, "output_index": 0, "content_index": 0,
               "text": text, "logprobs": []}  # fmt: skip
        done_item = {**item, "status": "completed", "content": [part]}
        yield {"type": "response.output_item.done", "output_index": 0, "item": done_item}
        usage = {
            "input_tokens": 9,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": len(words),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 9 + len(words),
        }
        yield {
            "type": "response.completed",
            "response": _response(self.rid, "completed", [done_item], usage=usage),
        }


def lanes(ws: ServerConnection) -> None:
    """The stand-in (see the module)."""
    numbers = itertools.count(1)
    seq = itertools.count()
    running: dict[str | None, _Run] = {}
    queued: dict[str | None, list[dict[str, Any]]] = {}
    owners: dict[str, str | None] = {}  # response id -> its lane

    def send(event: dict[str, Any], lane: str | None) -> None:
        body = {**event, "sequence_number": next(seq)}
        if lane is not None:
            body["stream_id"] = lane
        ws.send(validated(body))

    def start(lane: str | None, create: dict[str, Any]) -> None:
        said = _said(create.get("input", ""))
        reply = "Hello there."
        if "story" in said:
            reply = "The fox ran home." if "short" in said else "Once upon a time a fox ran far away."
        running[lane] = _Run(f"resp_L{next(numbers)}", lane, reply, steerable="steer me" in said)

    def handle(raw: str | bytes) -> None:
        event = json.loads(raw)
        if event.get("type") == "response.create":
            lane = event.get("stream_id")
            if lane in running:
                queued.setdefault(lane, []).append(event)
            else:
                start(lane, event)
            return
        if event.get("type") == "response.steer":
            target = event.get("previous_response_id")
            run = next((r for r in running.values() if r.rid == target), None)
            if run is None:
                failure = {"code": "response_not_active", "message": "The response is no longer active.",
                           "type": "invalid_request_error"}  # fmt: skip
                steer = {"input": event.get("input"), "previous_response_id": target}
                send({"type": "response.steer.failed", "error": failure, "steer": steer}, owners.get(target))
                return
            run.steered = _said(event.get("input"))
            run.waiting = False
            send({"type": "response.steer.accepted", "steer": {"id": f"steer_{run.rid}",
                  "previous_response_id": run.rid}}, run.lane)  # fmt: skip
            return
        send({"type": "error", "status": 400, "error": {"type": "invalid_request_error",
              "code": "unknown_event", "message": "Unknown event.", "param": "type"}}, None)  # fmt: skip

    while True:
        active = [r for r in running.values() if not r.waiting]
        try:
            raw = ws.recv(timeout=0 if active else None)
        except TimeoutError:
            raw = None
        except Exception:  # the client closed
            return
        if raw is not None:
            handle(raw)
            continue
        for run in active:
            event = next(run.events, None)
            if event is None or event.get("type") in ("response.completed", "response.incomplete"):
                if event is not None:
                    send(event, run.lane)
                del running[run.lane]
                if run.steered is not None:  # the successor, on the same lane
                    start(run.lane, {"input": run.steered})
                elif queued.get(run.lane):
                    start(run.lane, queued[run.lane].pop(0))
                continue
            if event:
                if event["type"] == "response.created":
                    owners[run.rid] = run.lane
                send(event, run.lane)

"""What the server sends for one recorded interaction: the Player's plan (transforms, faults,
chunking, timing) after a resumption, with the headers a real server may send and every way a
stream ends early turned into `ConnectionDropped`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpcore

from ... import protocols as _protocols
from ...plan.resume import Resume, resume_index
from ...plan.resume import is_sse as _is_sse
from ...plan.resume import resumed as _resumed
from ...plan.serving import Plan, plan_response
from ...store.cassette import Interaction
from ...variants import chunking as _chunking
from ...variants import faults as _faults
from ...variants import timing as _timing
from ...variants import transforms as _transforms

_DROP_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
)


class ConnectionDropped(Exception):
    """Raised inside a response body to make the server close the connection mid-body."""


@dataclass
class Prepared:
    """One replayed response, ready to send: the plan (status, headers, timed chunks, how it ends)."""

    plan: Plan
    resumed_at: int | None = None  # byte offset of the recorded body the stream resumed at


def prepare(
    interaction: Interaction,
    *,
    url: str = "",
    chunking: _chunking.Chunking = _chunking.as_recorded,
    transforms: Sequence[_transforms.Transform] = (),
    timing: _timing.Timing = _timing.instant,
    faults: Sequence[_faults.Fault] = (),
    attempt: int = 0,
    last_event_id: str | None = None,
    cors: str | None = None,
    holds: Callable[[bytes], Sequence[tuple[int, frozenset[Any]]]] | None = None,
    resume: dict[str, Resume] | None = None,
    sent: bytes | None = None,
    stays_open: bool = False,
) -> Prepared:
    """What to send for a recorded interaction: [`ssemock.player.replay.plan_response`][ssemock.plan_response] (transforms,
    faults, chunking, timing, as the Player serves respx), after resuming past ``last_event_id``.

    For a real server: stalls really wait (scaled by the timing's factor, if any), and a fault
    that ends the stream, or a failure recorded mid-stream, makes the plan end with
    `ConnectionDropped`. A resumption after which no event carries another ID is a
    ``204 No Content``. ``holds``: where a server-push stream waits for requests (see
    [`ssemock.plan.push_replay`][ssemock.plan.push_replay]). ``resume``: the interaction's `resume_index`, when built already.
    ``sent``: the request body sent, whose JSON-RPC ids the answer carries (`ssemock.protocols.answer_edits`).
    ``stays_open``: keep the stream open after its last chunk (`ssemock.protocols.stays_open`).
    """
    response = interaction.response
    resumed_at = None
    if last_event_id and _is_sse(response):
        found = (resume if resume is not None else resume_index(response.body)).get(last_event_id)
        if found is not None:
            resumed_at = found.offset
            if not found.moves_on:  # tell an EventSource to stop
                return Prepared(
                    Plan(204, _response_headers(response.headers, cors), b"", [], [], None), resumed_at
                )
            response = _resumed(response, resumed_at)
    plan = plan_response(
        response,
        url=url,
        core=httpcore,
        chunking=chunking,
        transforms=transforms,
        timing=timing,
        faults=faults,
        attempt=attempt,
        holds=holds,
        answer=_protocols.answer_edits(sent, interaction.request.body, response.body),
        stays_open=stays_open,
    )
    error = plan.error
    if error is not None and not isinstance(error, ConnectionDropped):
        error = ConnectionDropped(str(error))
    plan = replace(
        plan,
        headers=_response_headers(plan.headers, cors),
        error=error,
        stall_factor=1.0 if timing.factor is None else timing.factor,
    )
    return Prepared(plan, resumed_at)


def _response_headers(headers: Sequence[tuple[str, str]], cors: str | None) -> list[tuple[str, str]]:
    out = [(k, v) for k, v in headers if k not in _DROP_HEADERS]
    if cors is not None and not any(k == "access-control-allow-origin" for k, _ in out):
        out.append(("access-control-allow-origin", cors))
    return out

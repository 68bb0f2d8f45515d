"""What a conforming client delivers for one case under one variant, from what `ssemock serve`
sends (its own `prepare`: transforms, faults, chunking) read by the reference decoder, and, for
a reconnection case, the resumption the server answers the client's ``Last-Event-ID`` with."""

from __future__ import annotations

from dataclasses import dataclass

from ...framing.ends import event_ends
from ...framing.sse import Decoder
from ...store.cassette import Interaction
from ...variants import chunking as _chunking
from ...variants import faults as _faults
from ...variants import transforms as _transforms
from ..serve import prepare

__all__ = ["Delivery", "Served", "served"]

_MOST_CONNECTIONS = 8


@dataclass(frozen=True)
class Delivery:
    """One event as a client reports it: its type, data and ID (``own_id``: the ID its own block
    set, '' if none; the specification's ID is the last event ID, which persists)."""

    type: str
    data: str
    id: str
    own_id: str


@dataclass(frozen=True)
class Served:
    """What the first connection of a variant is sent (``body``, cut at ``ends``) and what a
    conforming client delivers over every connection (``events``)."""

    body: bytes
    ends: tuple[int, ...]
    events: tuple[Delivery, ...]


def served(
    interaction: Interaction,
    chunking: _chunking.Chunking,
    transforms: list[_transforms.Transform],
    faults: list[_faults.Fault],
) -> Served:
    """The served body and the events a conforming client delivers, connection after
    connection while the stream drops and resumes (as the serve app answers them)."""
    first = prepare(interaction, chunking=chunking, transforms=transforms, faults=faults).plan
    out: list[Delivery] = []
    last_id = ""
    plan = first
    for attempt in range(1, _MOST_CONNECTIONS + 1):
        if plan.status != 200:
            break
        body = plan.body if plan.cut_at is None else plan.body[: plan.cut_at]
        events, last_id = _read(body, last_id)
        out += events
        if plan.cut_at is None and plan.error is None:
            break
        plan = prepare(
            interaction,
            chunking=chunking,
            transforms=transforms,
            faults=faults,
            attempt=attempt,
            last_event_id=last_id or None,
        ).plan
    return Served(first.body, tuple(first.ends), tuple(out))


def _read(body: bytes, last_id: str) -> tuple[list[Delivery], str]:
    """The events of one connection's bytes, each with its last event ID and its own block's ID."""
    spec, own = Decoder(last_event_id=last_id), Decoder()
    out: list[Delivery] = []
    start = 0
    for end in [*event_ends(body, sse=True), len(body)]:
        own.last_event_id = ""
        block = body[start:end]
        for ev, mine in zip(spec.feed(block), own.feed(block)):
            out.append(Delivery(ev.event, ev.data, ev.id, mine.id))
        start = end
    return out, spec.last_event_id

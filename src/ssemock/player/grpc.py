"""A player's gRPC calls: each call a gRPC stack dispatches is answered from the cassette (a
`ssemock.plan.grpc.serving.ServedCall`, handed to the stack in the answer's extensions), recorded
(`ssemock.stacks.RecordCall` with a `ssemock.plan.grpc.record.GrpcRecorder`), passed to an allowed
host, or refused as unmatched, naming the method and the first differing field."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from .. import stacks as _stacks
from ..core.extras import require
from ..plan.errors import UnmatchedRequestError
from ..plan.grpc import matching
from ..plan.grpc.record import GrpcRecorder
from ..plan.grpc.serving import CALL, Call, ServedCall
from ..store.model import Interaction, Request
from ..variants.grpc.faults import CallFault, for_call
from . import reporting

__all__ = ["handle", "is_grpc", "require_extra"]


class Player(Protocol):
    """What a gRPC call needs of the `ssemock.Player` (not imported: no cycle)."""

    cassette: Any
    options: Any
    timing: Any
    guard: Any
    faults: list[Any]
    lock: threading.Lock
    allow_playback_repeats: bool
    grpc_calls: list[GrpcRecorder]
    served_calls: list[ServedCall]
    call_attempts: dict[tuple[int, int], int]
    _replays: bool
    _records: bool

    @property
    def where(self) -> str: ...

    @property
    def selection(self) -> Any: ...


def is_grpc(request: httpx.Request) -> bool:
    """Whether ``request`` is a gRPC call dispatched by a gRPC stack."""
    return CALL in request.extensions


def require_extra(interactions: Sequence[Interaction]) -> None:
    """A cassette holding gRPC calls is replayed with grpcio installed: MissingExtraError naming
    the ``grpc`` extra otherwise."""
    if any(x.grpc is not None for x in interactions):
        require("grpc", "grpc", "replaying a cassette of gRPC calls")


def _faults(player: Player, index: int, interaction: Interaction) -> tuple[list[CallFault], bool]:
    """The player's faults that apply to the call at ``index`` (`ssemock.variants.grpc.faults.for_call`)."""
    return for_call(player.faults, player.call_attempts, index, interaction.request)


def handle(player: Player, request: httpx.Request, sent: Request) -> httpx.Response:
    """Answer a call: a response carrying the `ServedCall` (replay), or raise
    `ssemock.stacks.RecordCall` (record), `ssemock.stacks.Allowed` or `UnmatchedRequestError`."""
    __tracebackhide__ = True
    call: Call = request.extensions[CALL]
    # the messages are the call's, not a body; httpx's own Host and Content-Length are no metadata
    # (gRPC reserves both names)
    headers = [(k, v) for k, v in sent.headers if k not in ("host", "content-length")]
    sent = dataclasses.replace(sent, headers=headers, body=None)
    method = urlsplit(sent.url).path
    first = [] if call.request is None else [call.request]
    interactions = player.cassette.interactions
    if player._replays:
        repeats = "first" if player.allow_playback_repeats else "never"

        def fits(i: int, messages: Sequence[bytes] = first, ended: bool = False) -> bool:
            g = interactions[i].grpc
            return (
                g is not None
                and g.kind == call.kind
                and g.method == method
                and bool(matching.pick(interactions, [i], messages, ended=ended))
            )

        with player.lock:
            selection = player.selection
            index = selection.take_where(sent, fits, repeats=repeats)
        if index is not None:

            def rematch(current: int, messages: Sequence[bytes], ended: bool) -> tuple[int, Interaction]:
                with player.lock:
                    if fits(current, messages, ended):
                        return current, interactions[current]
                    choice = selection.take_where(sent, lambda i: fits(i, messages, ended), repeats=repeats)
                    if choice is None:
                        bucket = [i for i in selection.candidates(sent) if fits(i, (), False)]
                        raise UnmatchedRequestError(
                            matching.explain(
                                player.where,
                                sent.url,
                                method,
                                interactions,
                                bucket,
                                messages,
                                ended=ended,
                                decode=call.decode or served.decode,
                            )
                        )
                    selection.release(current)
                    return choice, interactions[choice]

            interaction = interactions[index]
            with player.lock:
                faults, consumes = _faults(player, index, interaction)
                if not consumes:
                    selection.release(index)
            served = ServedCall(
                interaction,
                index,
                faults=faults,
                timing=player.timing,
                timeout=call.timeout,
                sent=first,
                rematch=rematch,
            )
            with player.lock:
                player.served_calls.append(served)
            return httpx.Response(200, extensions={CALL: served})
    if player._records:
        recorder = GrpcRecorder(sent, method, call.kind, player.options.before_record_response)
        with player.lock:
            player.grpc_calls.append(recorder)
        raise _stacks.RecordCall(request, recorder)
    if reporting.passes(player.guard, player.cassette, request.url.host or "", sent):
        raise _stacks.Allowed(f"ssemock: gRPC {request.url.host}: an allowed host")
    with player.lock:
        same = [i for i, x in enumerate(interactions) if x.grpc is not None and x.grpc.method == method]
        reachable = set(player.selection.candidates(sent)) if player._replays else set(same)
    bucket = [i for i in same if i in reachable]  # what match_on (the URL's parts) lets it reach
    elsewhere = [interactions[i].request.url for i in same if i not in reachable]
    raise UnmatchedRequestError(
        matching.explain(
            player.where,
            sent.url,
            method,
            interactions,
            bucket,
            first,
            decode=call.decode,
            elsewhere=elsewhere,
        )
    )

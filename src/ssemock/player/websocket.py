"""A player's WebSocket sessions: each handshake a WebSocket stack dispatches is answered from
the cassette (a `ssemock.plan.conversation.Conversation`, handed to the stack in the 101's
extensions), recorded (`ssemock.stacks.RecordSession` with a `ssemock.plan.websocket.record.WsRecorder`),
passed to an allowed host, or refused as unmatched; and, at the end, what the conversations say:
messages that matched nothing fail the test, recorded messages never sent and pings of the
``pings`` re-framing never answered with a pong are reported."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from typing import Any, Protocol

import httpx

from .. import stacks as _stacks
from ..plan.conversation import UnmatchedMessageError
from ..plan.errors import SsemockWarning, UnmatchedRequestError
from ..plan.websocket.record import WsRecorder
from ..plan.websocket.refused import refused_conversation
from ..plan.websocket.variants import VariedConversation
from ..redaction.rules import mask_text
from ..store.model import Request
from ..variants.transforms import WEBSOCKET
from ..variants.websocket import chunking as ws_chunking
from ..variants.websocket import faults as ws_faults
from . import reporting


class Player(Protocol):
    """What a WebSocket handshake needs of the `ssemock.Player` (not imported: no cycle)."""

    cassette: Any
    options: Any
    timing: Any
    guard: Any
    lock: threading.Lock
    allow_playback_repeats: bool
    conversations: list[Any]
    chunking: Any
    transforms: list[Any]
    faults: list[Any]
    plays: list[Any]
    _replays: bool
    _records: bool

    @property
    def where(self) -> str: ...

    @property
    def selection(self) -> Any: ...

    def started_session(self, recorder: WsRecorder) -> None: ...

    def session_group(self, index: int) -> Any: ...


__all__ = ["handle", "is_websocket", "teardown", "tell", "unanswered"]


def is_websocket(request: httpx.Request) -> bool:
    """Whether ``request`` is a WebSocket handshake dispatched by a WebSocket stack."""
    return request.extensions.get("ssemock.transport") == "websocket"


def handle(player: Player, request: httpx.Request, sent: Request) -> httpx.Response:
    """Answer a handshake: a 101 carrying the conversation (replay), or raise
    `ssemock.stacks.RecordSession` (record), `ssemock.stacks.Allowed` or `UnmatchedRequestError`."""
    __tracebackhide__ = True
    if player._replays:
        with player.lock:
            index = player.selection.take(sent, repeats="first" if player.allow_playback_repeats else "never")
        if index is not None:
            interaction = player.cassette.interactions[index]
            group = player.session_group(index)  # a session spanning connections (issue 44 item 2)
            if interaction.websocket is None:  # a refused upgrade, served as recorded
                refused = refused_conversation(interaction, index, player.where)
                if group is not None:  # its answer is all it had: released now
                    group.done(index, [0])
                with player.lock:
                    player.conversations.append(refused)
                return httpx.Response(
                    101, extensions={"ssemock.conversation": refused, "ssemock.timing": player.timing}
                )
            conversation = VariedConversation(  # under the test's chunking and WebSocket faults (issue 35)
                interaction,
                index,
                player.where,
                chunking=ws_chunking.for_http(player.chunking),
                reframing="+".join(t.name for t in player.transforms if WEBSOCKET in t.kinds)
                or "as_recorded",
                fault=ws_faults.aimed(player.faults, index, interaction.request),
                attempt=len(player.conversations),
                after_plays=len(player.plays),
                ignore=player.options.ignore_message_paths,
                group=group,
            )
            with player.lock:
                player.conversations.append(conversation)
            return httpx.Response(
                101, extensions={"ssemock.conversation": conversation, "ssemock.timing": player.timing}
            )
    if player._records:
        recorder = WsRecorder(
            sent,
            on_start=player.started_session,
            before_record_response=player.options.before_record_response,
        )
        raise _stacks.RecordSession(request, recorder)
    if reporting.passes(player.guard, player.cassette, request.url.host, sent):
        raise _stacks.Allowed(f"ssemock: WebSocket {request.url.host}: an allowed host")
    raise UnmatchedRequestError(reporting.explain(player, sent))  # type: ignore[arg-type]


def tell(player: Player, error: BaseException) -> list[str]:
    """The test failed with ``error``: the messages that matched nothing are told now, once (not
    again at teardown); returned, those ``error`` does not carry itself (an SDK turned the
    mismatch into a closed connection), for the failure's report to say."""
    carried = set(_messages(error))
    untold: list[str] = []
    for conversation in player.conversations:
        if conversation.mismatches and not conversation.told:
            conversation.told = True
            untold.extend(m for m in conversation.mismatches[:1] if m not in carried)
    return untold


def _messages(error: BaseException) -> Iterator[str]:
    """The messages of ``error``, of the errors it chains and of those an exception group holds."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        exc = todo.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        yield str(exc)
        todo.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)
        if isinstance(exc, BaseExceptionGroup):
            todo.extend(exc.exceptions)


def teardown(player: Player) -> None:
    """After a replay: raise the first message that matched nothing, unless the test was told
    already (`tell`; an SDK may have swallowed it as a closed connection); warn of recorded client
    messages never sent, and of sessions whose recorded reads could not be kept
    (`ssemock.plan.conversation.Conversation.wire_note`) and of pings never answered with a pong
    (`VariedConversation.unanswered_pings`)."""
    for conversation in player.conversations:
        if conversation.mismatches and not conversation.told:
            conversation.told = True
            raise UnmatchedMessageError(conversation.mismatches[0])
    for conversation in player.conversations:
        note = conversation.wire_note() if hasattr(conversation, "wire_note") else None
        if note:  # the recorded reads were not kept: once per session
            warnings.warn(mask_text(note), SsemockWarning, stacklevel=3)
        unsent = [] if conversation.mismatches else conversation.unsent()  # a mismatch said why
        if unsent:
            warnings.warn(
                mask_text(
                    f"ssemock: {player.where}, interaction #{conversation.index} "
                    f"({conversation.interaction.request.url}): {len(unsent)} message(s) the recorded client "
                    f"sent were never sent in this replay, the first: {str(unsent[0].data)[:120]!r}"
                ),
                SsemockWarning,
                stacklevel=3,
            )
        pings = conversation.unanswered_pings() if hasattr(conversation, "unanswered_pings") else []
        if pings:
            warnings.warn(
                mask_text(unanswered(player.where, conversation, pings)), SsemockWarning, stacklevel=3
            )


def unanswered(where: str, conversation: Any, pings: list[bytes]) -> str:
    """The report of the pings a replay sent (the ``pings`` re-framing) that the client never
    answered with a pong: RFC 6455 5.5.2 says it must, and a server that pings may close on it."""
    return (
        f"ssemock: {where}, interaction #{conversation.index} ({conversation.interaction.request.url}): "
        f"{len(pings)} ping(s) served under the re-framing {conversation.reframing} were never answered "
        f"with a pong, the first: {pings[0][:120]!r} (a client must answer every ping with a pong "
        "carrying its payload, RFC 6455 section 5.5.2)"
    )

"""JSON-RPC ids a client makes up: a replay matches a request whatever its ids are, and answers
with the ids this run's client sent.

a2a-sdk gives every JSON-RPC call a random id (a UUID), so a recorded request never has the id
the replaying client sends. A protocol spoken over JSON-RPC declares `RULE` as its
``client_ids`` (`ssemock.protocols.Protocol`): matching compares a request's JSON without the
``id`` of each JSON-RPC request in it (`without_ids`), and the recorded answer served to a
request whose ids differ has each recorded id replaced by the one sent (`answer_edits`).

An answer may carry a request's id elsewhere too: the mcp SDK names each ``subscriptions/listen``
request from a process-wide counter (``"listen-1"``, ``"listen-2"``, ...) and routes the frames of
its stream by ``_meta["io.modelcontextprotocol/subscriptionId"]``, that very id. Such members
(`ECHOES`) get the sent id as well, wherever they are, so a replay in a process that listened
before routes the recorded frames to this run's subscription.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..core.edits import Edit

__all__ = ["ECHOES", "RULE", "ClientIds", "answer_edits", "ids", "without_ids"]

ECHOES = ("io.modelcontextprotocol/subscriptionId",)
"""Member names whose value, anywhere in an answer, is the id of the request it answers (MCP's
subscription id in a listen stream's ``_meta``): replaced by the sent id like the top-level ``id``."""


def _requests(value: Any) -> Iterator[dict[str, Any]]:
    """The JSON-RPC requests of one message or a batch (notifications and responses aside)."""
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict) and item.get("jsonrpc") == "2.0" and "method" in item and "id" in item:
            yield item


def ids(value: Any) -> list[Any]:
    """The ids of the JSON-RPC requests in a parsed request body, in order."""
    return [item["id"] for item in _requests(value)]


def without_ids(value: Any) -> Any:
    """A parsed request body with the ``id`` of each JSON-RPC request left out (anything else
    as it is): two calls that differ only by the ids their clients drew compare equal."""
    if not any(True for _ in _requests(value)):
        return value
    if isinstance(value, list):
        return [without_ids(item) for item in value]
    return {k: v for k, v in value.items() if k != "id"}


# a JSON string (on one line) or a bracket: the tokens that say how deep a member is
_TOKENS = re.compile(rb'"(?:[^"\\\n]|\\.)*"|[{}\[\]]')
# where a message's top-level "id" member sits: in an object, or an object in a batch
_TOP = ([b"{"], [b"[", b"{"])


def answer_edits(body: bytes, replaced: Mapping[Any, Any], echoes: Sequence[str] = ECHOES) -> list[Edit]:
    """The edits that give a recorded answer (a JSON body, a batch, or a stream of JSON-RPC
    messages) the ids this run's client sent: each message's top-level ``"id": <recorded>``
    becomes ``"id": <sent>`` (``replaced``: recorded id -> sent id), and so does the value of a
    member named in ``echoes`` at any depth; an ``id`` nested in a result is left as it is."""
    if not replaced:
        return []
    by_text = {orjson.dumps(old): orjson.dumps(new) for old, new in replaced.items()}
    value = re.compile(rb"\s*:\s*(" + b"|".join(re.escape(k) for k in by_text) + rb")(?=\s*[,}])")
    echoed = {orjson.dumps(name) for name in echoes}
    edits: list[Edit] = []
    stack: list[bytes] = []
    for token in _TOKENS.finditer(body):
        text = token.group()
        if text in (b"{", b"["):
            stack.append(text)
        elif text in (b"}", b"]"):
            del stack[-1:]
        elif (text == b'"id"' and stack in _TOP) or text in echoed:
            found = value.match(body, token.end())
            if found is not None:
                edits.append((found.start(1), found.end(1), by_text[found.group(1)]))
    return edits


@dataclass(frozen=True)
class ClientIds:
    """How a protocol's requests carry ids their clients make up (`RULE`: JSON-RPC's): the ids
    of a parsed request body, the body without them, the edits giving an answer the sent ids."""

    ids: Callable[[Any], list[Any]]
    without_ids: Callable[[Any], Any]
    answer_edits: Callable[[bytes, Mapping[Any, Any]], list[Edit]]


RULE = ClientIds(ids, without_ids, answer_edits)
"""JSON-RPC's rule, which ``mcp`` and ``a2a`` declare."""

"""Which recorded gRPC call answers a call, and what differs when none does.

A call matches a recorded one by its method path (``/package.Service/Method``: the request URL's
path, with the rest of the URL as the player's ``match_on`` says) and its request messages, never
by its metadata (a replay sends other credentials). A unary request is known when the call starts;
a request stream is matched as a conversation, message by message, as the client sends it
(`pick`). When nothing matches, `explain` names the method and the first differing field of the
first differing message: decoded with the message's own class where the stack knows it (its
``request_serializer`` belongs to a protobuf message class), read as protobuf's wire format
otherwise, and by byte when it is not protobuf either."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...store.model import Interaction

__all__ = ["Decode", "explain", "first_difference", "pick", "sends"]

Decode = Callable[[bytes], Any]
"""A request message's class's parser (``HelloRequest.FromString``), when the stack knows it."""


def sends(x: Interaction) -> list[bytes]:
    """The request messages a recorded call's client sent, in order."""
    return [] if x.grpc is None else [m.data for m in x.grpc.sent()]


def pick(
    interactions: Sequence[Interaction], among: Sequence[int], sent: Sequence[bytes], *, ended: bool = False
) -> list[int]:
    """Of the interactions ``among``, those whose client sent ``sent`` first (all it sent, when
    the client ``ended`` its stream), in order."""
    n = len(sent)
    out = []
    for i in among:
        recorded = sends(interactions[i])
        if recorded[:n] == list(sent) and (not ended or len(recorded) == n):
            out.append(i)
    return out


def _text(value: Any, most: int = 60) -> str:
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return repr(value[:most]) + ("..." if len(value) > most else "")
    shown = repr(value)
    return shown if len(shown) <= most else shown[:most] + "..."


def _fields_of(message: Any) -> dict[str, Any] | None:
    """A protobuf message's set fields by name (its ``ListFields()``), in field-number order."""
    listed = getattr(message, "ListFields", None)
    if listed is None:
        return None
    return {fd.name: value for fd, value in sorted(listed(), key=lambda pair: pair[0].number)}


def _decoded(sent: bytes, recorded: bytes, decode: Decode) -> str | None:
    try:
        a, b = decode(recorded), decode(sent)
    except Exception:  # the class does not parse these bytes: read them as the wire format
        return None
    fa, fb = _fields_of(a), _fields_of(b)
    if fa is None or fb is None:
        return None if a == b else f"recorded {_text(a)}, sent {_text(b)}"
    for name in [*fa, *(k for k in fb if k not in fa)]:
        if fa.get(name) != fb.get(name):
            return f"field {name}: recorded {_text(fa.get(name))}, sent {_text(fb.get(name))}"
    return None


def _wire_fields(data: bytes) -> list[tuple[int, Any]] | None:
    """Protobuf's wire format read without a schema: ``(field number, value)`` in order, or None
    when ``data`` is not a protobuf message."""

    def varint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            if at >= len(data) or shift > 63:
                raise ValueError
            byte = data[at]
            value |= (byte & 0x7F) << shift
            at, shift = at + 1, shift + 7
            if byte < 0x80:
                return value, at

    out: list[tuple[int, Any]] = []
    at = 0
    try:
        while at < len(data):
            key, at = varint(at)
            number, wire = key >> 3, key & 7
            if number == 0:
                return None
            value: int | bytes
            if wire == 0:
                value, at = varint(at)
            elif wire in (1, 5):
                size = 8 if wire == 1 else 4
                value, at = data[at : at + size], at + size
            elif wire == 2:
                size, at = varint(at)
                value, at = data[at : at + size], at + size
            else:
                return None
            if at > len(data):
                return None
            out.append((number, value))
    except ValueError:
        return None
    return out


def first_difference(sent: bytes, recorded: bytes, decode: Decode | None = None) -> str | None:
    """The first field at which a sent request message differs from the recorded one (None: they
    are the same): by the message's class (``decode``), else by protobuf's wire format, else by byte."""
    if sent == recorded:
        return None
    if decode is not None:
        said = _decoded(sent, recorded, decode)
        if said is not None:
            return said
    a, b = _wire_fields(recorded), _wire_fields(sent)
    if a is not None and b is not None:
        for k in range(max(len(a), len(b))):
            ra, sb = (a[k] if k < len(a) else None), (b[k] if k < len(b) else None)
            if ra != sb:
                number = (ra or sb or (0, None))[0]
                return (
                    f"field {number}: recorded {_text(None if ra is None else ra[1])}, "
                    f"sent {_text(None if sb is None or sb[0] != number else sb[1])}"
                )
    at = next((k for k, (x, y) in enumerate(zip(sent, recorded)) if x != y), min(len(sent), len(recorded)))
    return (
        f"byte {at}: recorded {_text(recorded[at : at + 16])} ({len(recorded)} bytes), "
        f"sent {_text(sent[at : at + 16])} ({len(sent)} bytes)"
    )


def explain(
    where: str,
    url: str,
    method: str,
    interactions: Sequence[Interaction],
    among: Sequence[int],
    sent: Sequence[bytes],
    *,
    ended: bool = False,
    decode: Decode | None = None,
    elsewhere: Sequence[str] = (),
) -> str:
    """The UnmatchedRequestError message of a call no recorded call answers: the method, the
    cassette, the closest recorded call of the method and the first field that differs; or, when
    the method's recorded calls are all to other URLs (``elsewhere``), those URLs."""
    lines = [f"ssemock: no recorded gRPC call matches {method} ({url})", f"  cassette: {where}"]
    if not among and elsewhere:
        urls = ", ".join(sorted(set(elsewhere))[:3])
        lines.append(
            f"  the cassette's calls of {method} are to {urls}: the scheme or the target differs (a "
            "channel made before the player started is recorded as http://, even a secure one)"
        )
    elif not among:
        methods = sorted({x.grpc.method for x in interactions if x.grpc is not None})
        lines.append(
            f"  the cassette has no call of {method}"
            + (f"; its methods: {', '.join(methods[:8])}" if methods else " (no gRPC call at all)")
        )
    else:
        best = max(among, key=lambda i: _common(sends(interactions[i]), sent))
        recorded = sends(interactions[best])
        k = _common(recorded, sent)
        if k < len(sent) and k < len(recorded):
            said = first_difference(sent[k], recorded[k], decode)
            lines.append(f"  closest: interaction #{best}, request message {k + 1} differs at {said}")
        elif k < len(sent):
            lines.append(
                f"  closest: interaction #{best}, whose client sent {len(recorded)} message(s); this one sent "
                f"message {k + 1} too"
            )
        elif ended:
            lines.append(
                f"  closest: interaction #{best}, whose client sent {len(recorded)} message(s); this one "
                f"ended its stream after {len(sent)}"
            )
        else:
            lines.append(
                f"  every recorded call of {method} that matches was played already (#{best} the first)"
            )
    lines.append(
        "  record it: pytest --ssemock-record-mode=new_episodes (or once for a new cassette), "
        'or use_cassette(..., record_mode="new_episodes")'
    )
    return "\n".join(lines)


def _common(a: Sequence[bytes], b: Sequence[bytes]) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

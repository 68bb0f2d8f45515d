"""A gRPC call replayed, sans-IO (issue 46): each response step waits for the request messages
the recorded server had read before it (a bidirectional call is a conversation), timing and
stalls make due times, a deadline turns the late step into DEADLINE_EXCEEDED at once, a request
stream that strays is refused; and the first differing field of a mismatch."""

from __future__ import annotations

import pytest
from google.protobuf import struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from ssemock import UnmatchedRequestError
from ssemock.plan.grpc.matching import first_difference
from ssemock.plan.grpc.serving import ServedCall
from ssemock.store.grpc import GrpcCall, GrpcMessage, GrpcStatus
from ssemock.store.model import Interaction, Request, Response
from ssemock.variants import timing
from ssemock.variants.grpc.faults import status


def _talk() -> Interaction:
    messages = [
        GrpcMessage("send", 0.0, b"a"),
        GrpcMessage("recv", 0.1, b"A"),
        GrpcMessage("send", 0.2, b"b"),
        GrpcMessage("send", 0.25, b"c"),
        GrpcMessage("recv", 0.5, b"BC"),
    ]
    call = GrpcCall("/t.T/Talk", "stream_stream", messages, status=GrpcStatus("OK", "", 0.6))
    return Interaction(Request("POST", "http://t:1/t.T/Talk"), Response(200), grpc=call)


def test_each_response_waits_for_the_requests_recorded_before_it() -> None:
    served = ServedCall(_talk(), 0, timing=timing.recorded)
    assert [(s.data, s.needs, s.due) for s in served.steps] == [
        (b"A", 1, 0.1),
        (b"BC", 3, 0.5),
        (None, 3, 0.6),
    ]
    assert served.final.code == "OK"
    for message in (b"a", b"b", b"c"):
        served.send(message)
    served.end_stream()


def test_instant_timing_is_due_at_once_and_a_deadline_cuts_the_late_step() -> None:
    assert [s.due for s in ServedCall(_talk(), 0, timing=timing.instant).steps] == [None, None, None]
    late = ServedCall(_talk(), 0, timing=timing.recorded, timeout=0.3)
    assert [s.data for s in late.steps] == [b"A", None]
    end = late.steps[-1]
    assert end.end is not None and (end.end.code, end.due, end.needs) == ("DEADLINE_EXCEEDED", None, 0)


def test_a_status_fault_ends_where_the_recorded_server_had_read_so_far() -> None:
    served = ServedCall(_talk(), 0, timing=timing.instant, faults=[status("ABORTED", 1)])
    assert [(s.data, s.needs) for s in served.steps] == [(b"A", 1), (None, 3)]
    assert served.final.code == "ABORTED"


def test_a_stray_request_or_an_early_end_is_unmatched_without_another_recording() -> None:
    served = ServedCall(_talk(), 0, timing=timing.instant)
    with pytest.raises(UnmatchedRequestError):
        served.send(b"z")
    ended = ServedCall(_talk(), 0, timing=timing.instant)
    ended.send(b"a")
    ended.advance()
    with pytest.raises(UnmatchedRequestError):
        ended.end_stream()


def test_the_first_difference_by_class_by_wire_field_and_by_byte() -> None:
    a = struct_pb2.Value(string_value="left").SerializeToString()
    b = struct_pb2.Value(string_value="right").SerializeToString()
    assert (
        first_difference(b, a, struct_pb2.Value.FromString)
        == "field string_value: recorded 'left', sent 'right'"
    )
    assert first_difference(b, a) == "field 3: recorded 'left', sent 'right'"
    assert first_difference(b"\xff\xff", b"\xff\xfe").startswith("byte 1:")


@given(st.binary(max_size=40), st.binary(max_size=40))
def test_a_difference_is_named_exactly_when_the_messages_differ(a: bytes, b: bytes) -> None:
    said = first_difference(a, b)
    assert (said is None) == (a == b)

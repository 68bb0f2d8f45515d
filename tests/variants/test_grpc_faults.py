"""gRPC faults (issue 46 item 3): parsed from their names (one clear error for a bad one), aimed
with on=, and what each does to a call's outcome (pure: no channel)."""

from __future__ import annotations

import pytest

from ssemock.variants import faults
from ssemock.variants.grpc.faults import VARIANTS, Outcome, call_fault, get, status

MESSAGES = ((0.1, b"a"), (0.2, b"b"), (0.3, b"c"))
RECORDED = Outcome(MESSAGES, "OK", "", (("x-t", "1"),), 0.4)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_registered_fault_parses_to_its_own_name_and_changes_the_call(name: str) -> None:
    fault = faults.get(name)
    assert str(fault) == name
    served = call_fault(fault)
    assert served is not None and served.apply(RECORDED) != RECORDED


def test_status_cuts_after_its_message_and_ends_with_its_code() -> None:
    out = status("RESOURCE_EXHAUSTED", after_message=2, details="quota").apply(RECORDED)
    assert (out.messages, out.code, out.details, out.trailers, out.end_t) == (
        MESSAGES[:2],
        "RESOURCE_EXHAUSTED",
        "quota",
        (),
        0.2,
    )


def test_drop_ends_unavailable_and_stall_adds_a_wait_before_its_message() -> None:
    dropped = call_fault(faults.get("drop:after_message=1"))
    stalled = call_fault(faults.get("stall:before_message=3,seconds=2"))
    assert dropped is not None and stalled is not None
    out = dropped.apply(RECORDED)
    assert out.messages == MESSAGES[:1] and out.code == "UNAVAILABLE" and "connection broke" in out.details
    assert stalled.apply(RECORDED).stalls == ((2, 2.0),)


def test_a_fault_aimed_with_on_keeps_its_target() -> None:
    fault = faults.get("status:code=unauthenticated,after_message=0,on=/a.B/*")
    assert fault.on is not None and str(fault.on) == "/a.B/*"
    assert str(fault) == "status:code=UNAUTHENTICATED,after_message=0,on=/a.B/*"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("status:code=NOPE,after_message=1", "unknown gRPC status code 'NOPE'"),
        ("status:code=INTERNAL,after_message=-1", "after_message is a whole number >= 0"),
        ("status:code=INTERNAL,when=1", "status takes code=, after_message=, details="),
        ("status:code", "status takes code="),
    ],
)
def test_a_bad_fault_name_is_one_error_naming_it(name: str, said: str) -> None:
    with pytest.raises(ValueError, match=f"bad fault {name!r}") as caught:
        get(name)
    assert said in str(caught.value)


def test_a_misspelt_grpc_fault_is_named_with_its_correction_and_every_transport_s_faults() -> None:
    with pytest.raises(ValueError, match="did you mean 'status:code=UNAVAILABLE'") as caught:
        faults.get("statu:code=UNAVAILABLE")
    valid = str(caught.value).split("valid: ", 1)[1].split(", ")
    assert {"status", "drop", "close", "disconnect", "stall"} <= set(valid)


def test_http_and_websocket_only_faults_do_nothing_to_a_call() -> None:
    assert call_fault(faults.get("disconnect:after_event=1")) is None
    assert call_fault(faults.get("close:code=1000,after_message=1")) is None
    assert call_fault(faults.get("drop:after_byte=5")) is None

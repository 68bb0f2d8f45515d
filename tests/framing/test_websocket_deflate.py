"""permessage-deflate negotiation (RFC 7692 §7.1) in `ssemock.framing.websocket`: every answer
`agree_deflate` gives is one websockets' own client accepts for the offer it made (its sans-IO
extension factory is the oracle), and the compressed payloads read back through its extension."""

from __future__ import annotations

import itertools

import pytest
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.frames import Frame
from websockets.frames import Opcode as WsOpcode

from ssemock.framing.websocket import DeflateAgreement, agree_deflate, extension_offers

RECORDED = [
    None,
    DeflateAgreement(),
    DeflateAgreement(False, False, 12, 12),  # what the websockets server agrees to
    DeflateAgreement(True, True, 9, 15),
]


def _offer(factory: ClientPerMessageDeflateFactory) -> str:
    params = factory.get_request_params()
    return "; ".join(["permessage-deflate", *(k if v is None else f"{k}={v}" for k, v in params)])


OFFERS = [
    ClientPerMessageDeflateFactory(snct, cnct, smwb, cmwb)
    for snct, cnct, smwb, cmwb in itertools.product(
        (False, True), (False, True), (None, 9, 10, 15), (None, True, 10)
    )
]


@pytest.mark.parametrize("recorded", RECORDED, ids=lambda r: r.header() if r else "none")
def test_every_answer_is_one_the_offering_client_accepts(recorded: DeflateAgreement | None) -> None:
    for factory in OFFERS:
        offered = _offer(factory)
        answer = agree_deflate(offered, recorded)
        assert answer is not None, offered
        [(name, params)] = extension_offers(answer.header())
        assert name == "permessage-deflate"
        extension = factory.process_response_params(list(params.items()), [])  # raises if invalid
        deflater = answer.deflater(mem_level=5)
        message = ("Grüße aus 東京 " * 400).encode()
        for _ in range(2):  # the second message leans on the first's context, unless reset
            payload = deflater.compress(message)
            frame = Frame(WsOpcode.TEXT, payload, rsv1=True)
            assert extension.decode(frame).data == message
        if recorded is not None and recorded.server_max_window_bits and not factory.server_max_window_bits:
            assert answer.server_max_window_bits == recorded.server_max_window_bits  # as recorded


def test_offers_it_cannot_accept_are_declined_and_the_next_one_taken() -> None:
    assert agree_deflate("") is None
    assert agree_deflate("x-webkit-deflate-frame") is None
    assert agree_deflate("permessage-deflate; unknown_param") is None
    assert (
        agree_deflate("permessage-deflate; server_max_window_bits=8") is None
    )  # zlib writes no 8-bit window
    assert agree_deflate("permessage-deflate; server_max_window_bits=16") is None
    assert agree_deflate("permessage-deflate; client_max_window_bits; client_max_window_bits") is None
    taken = agree_deflate(
        "permessage-deflate; server_max_window_bits=8, permessage-deflate; client_max_window_bits",
        DeflateAgreement(False, False, 12, 12),
    )
    assert taken is not None and taken.header() == (
        "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12"
    )
    assert DeflateAgreement.parse(
        'permessage-deflate; server_no_context_takeover; client_max_window_bits="10"'
    ) == (DeflateAgreement(True, False, None, 10))
    assert DeflateAgreement.parse("x-other") is None and DeflateAgreement.parse(None) is None

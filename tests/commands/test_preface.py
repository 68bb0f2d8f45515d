"""One port for HTTP/1.1 and gRPC's HTTP/2 cleartext (`ssemock.commands.preface`): an app with
gRPC calls (``ssemock serve`` of a gRPC cassette) still answers an HTTP/1.1 request sent a byte
at a time (its first byte, ``P``, could begin the preface), and closes a connection that says
neither within the header timeout, whole preface or not."""

from __future__ import annotations

import socket

import pytest

from ssemock.commands import serve
from ssemock.commands.loopback import running
from ssemock.commands.preface import PREFACE
from ssemock.store.cassette import Cassette, Interaction, Request, Response
from ssemock.store.grpc import GrpcCall, GrpcMessage


def _grpc_cassette() -> Cassette:
    call = GrpcCall(
        "/demo.Chat/Say", "unary_unary", [GrpcMessage("send", 0, b"q"), GrpcMessage("recv", 0.01, b"a")]
    )
    interaction = Interaction(
        Request("POST", "http://127.0.0.1:1/demo.Chat/Say", [], None),
        Response(200, [("content-type", "application/grpc")]),
        grpc=call,
    )
    return Cassette([interaction])


def _read_all(sock: socket.socket) -> bytes:
    out = b""
    while data := sock.recv(65536):
        out += data
    return out


def test_http_sent_a_byte_at_a_time_is_answered_by_http() -> None:
    app = serve.app(_grpc_cassette())
    assert app.state.h2c_protocol is not None
    with running(app) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for (
                byte
            ) in b"POST /demo.Chat/Say HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n":
                sock.sendall(bytes([byte]))
            answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 404 ")  # HTTP/1.1's answer: a gRPC call is no HTTP interaction


@pytest.mark.parametrize("sent", [b"", PREFACE[:10]], ids=["nothing", "part of the preface"])
def test_a_connection_that_says_nothing_is_closed_at_the_header_timeout(sent: bytes) -> None:
    with running(serve.app(_grpc_cassette()), header_timeout=0.2) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(sent)
            assert _read_all(sock) == b""  # closed by the server, nothing said

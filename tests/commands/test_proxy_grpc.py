"""``ssemock proxy`` records gRPC (`ssemock.commands.proxy.grpc`): grpcio calls to the proxy's
port (h2c, told by the preface) are relayed to an HTTP/2 upstream over TLS (ALPN h2, verified
against ``ca_bundle``; the h2c upstream is tests/commands/test_serve_grpc's recording) and
recorded with the metadata credential redacted; the same proxy in record mode ``none``, the
upstream stopped, answers them from the cassette; a call it can neither replay nor record ends
``UNIMPLEMENTED`` naming the cassette; an interrupted proxy keeps a call under way as a partial."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
import trustme
from grpc_servers import KEY, STREAM, calls, generic_server

from ssemock.commands.loopback import running
from ssemock.commands.proxy import app as proxy_app
from ssemock.store.cassette import Cassette


def test_calls_to_a_tls_upstream_are_recorded_then_replayed_with_it_stopped(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    credentials = grpc.ssl_server_credentials(
        [(cert.private_key_pem.bytes(), b"".join(blob.bytes() for blob in cert.cert_chain_pems))]
    )
    log: list[str] = []
    with generic_server(credentials) as port:
        upstream = f"https://127.0.0.1:{port}"
        with running(proxy_app(upstream, cassette_dir=tmp_path, ca_bundle=bundle, log=log.append)) as url:
            live = calls(url.removeprefix("http://"))
    assert live["stream"][0][0] == b"hi part 0 \xc3\xa9" and live["say"] == b"echo yo"
    assert sum("saved into proxy" in line for line in log) == 4
    text = (tmp_path / "proxy.json").read_text()
    assert KEY not in text and KEY.split()[1] not in text
    first = Cassette.load(tmp_path / "proxy.json").interactions[0]
    assert first.request.url == f"{upstream}{STREAM}" and first.grpc is not None
    assert [m.direction for m in first.grpc.messages] == ["send"] + ["recv"] * 7
    assert first.grpc.status.code == "OK" and ("x-served-by", "b") in first.grpc.trailers
    with running(proxy_app(upstream, cassette_dir=tmp_path, record_mode="none", ca_bundle=bundle)) as url:
        assert calls(url.removeprefix("http://")) == live  # the upstream is stopped: all replayed


def test_a_call_neither_replayed_nor_recorded_is_unimplemented(tmp_path: Path) -> None:
    log: list[str] = []
    app = proxy_app("http://127.0.0.1:9", cassette_dir=tmp_path, record_mode="none", log=log.append)
    with running(app) as url, grpc.insecure_channel(url.removeprefix("http://")) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(STREAM)(b"hi", timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert "no call of /demo.Chat/Stream in proxy (record mode none)" in refused.value.details()
    assert any("UNIMPLEMENTED" in line for line in log)


def test_an_upstream_that_cannot_be_reached_is_unavailable(tmp_path: Path) -> None:
    with running(proxy_app("http://127.0.0.1:9", cassette_dir=tmp_path)) as url:
        with grpc.insecure_channel(url.removeprefix("http://")) as channel:
            with pytest.raises(grpc.RpcError) as failed:
                channel.unary_unary(STREAM)(b"hi", timeout=10)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "the upstream failed" in (failed.value.details() or "")
    assert not (tmp_path / "proxy.json").exists()


def test_an_interrupted_proxy_keeps_a_call_under_way_as_a_partial(tmp_path: Path) -> None:
    release = threading.Event()

    def slow(request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        yield b"one"
        yield b"two"
        release.wait(30)
        yield b"three"

    handler = grpc.method_handlers_generic_handler(
        "demo.Slow", {"Go": grpc.unary_stream_rpc_method_handler(slow)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    app = proxy_app(f"http://127.0.0.1:{port}", cassette_dir=tmp_path)
    try:
        with running(app) as url, grpc.insecure_channel(url.removeprefix("http://")) as channel:
            call = channel.unary_stream("/demo.Slow/Go")(b"q", timeout=30)
            assert [next(call), next(call)] == [b"one", b"two"]
            [kept] = app.state.ssemock.keep_in_flight()  # as on SIGTERM
            release.set()
            assert list(call) == [b"three"]  # the call goes on for the client
    finally:
        server.stop(None)
    [partial] = Cassette.load(kept).interactions
    assert partial.grpc is not None and not partial.response.complete
    assert [m.data for m in partial.grpc.received()] == [b"one", b"two"]
    assert (
        partial.grpc.status.code == "UNKNOWN"
        and "cut before the call's status" in partial.grpc.status.details
    )
    assert not (tmp_path / "proxy.json").exists()  # kept as a partial: not saved into the cassette too

"""Replaying cassettes to any HTTP or WebSocket client over a real socket, from a test: `app`
(the ASGI app ``ssemock serve`` runs) on loopback with `running`, which yields its base URL.

    import httpx

    import ssemock
    from ssemock.serve import app, running

    cassette = ssemock.Cassette()
    cassette.add("GET", "https://api.example/v1/stream", [b"data: hi\\n\\n"])
    with running(app(cassette, chunking="bytewise")) as url:
        assert httpx.get(url + "/v1/stream").text == "data: hi\\n\\n"
"""

from .commands.loopback import running
from .commands.serve import app

__all__ = ["app", "running"]

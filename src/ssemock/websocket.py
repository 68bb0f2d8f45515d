"""WebSocket sessions: what a cassette keeps of one (`WebSocket`, its `Message` list, the
`Wire` reads, the `FrameNote` map and the `Close`), and what a test builds by hand to see a
session under a variant without a client (`Session` of `ServerMessage` frames, served by `serve`
as the `Read` list a client would get).

    import ssemock
    from ssemock.websocket import Close, Message, WebSocket

    session = WebSocket(
        messages=[Message("recv", 0.01, "text", '{"type": "session.created"}')],
        close=Close(code=1000, by="server", clean=True),
    )
    interaction = ssemock.Interaction(
        ssemock.Request("GET", "wss://api.openai.com/v1/realtime"),
        ssemock.Response(101),
        websocket=session,
    )
"""

from .framing.websocket import Opcode
from .store.websocket import Close, FrameNote, Message, WebSocket, Wire
from .variants.websocket.faults import Session
from .variants.websocket.frames import ServerMessage
from .variants.websocket.serve import Read, Served, serve

__all__ = [
    "Close",
    "FrameNote",
    "Message",
    "Opcode",
    "Read",
    "Served",
    "ServerMessage",
    "Session",
    "WebSocket",
    "Wire",
    "serve",
]

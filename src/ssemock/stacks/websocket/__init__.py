"""The WebSocket client stacks, one module per library (`websockets_asyncio`, `websockets_sync`,
`websockets_legacy`, `aiohttp`, `httpx_ws`), and the in-memory connections they talk through
(`memory`: the asyncio transport; `memory_socket`: the sync clients' socket)."""

from ...core.packages import fresh

fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)

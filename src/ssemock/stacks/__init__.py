"""Client stacks: where a request is intercepted, and how a plan is served in each library's types.

One module per stack: `httpcore` (httpx), `httpcore2` (httpx2, the OpenAI and
Anthropic SDKs), `aiohttp`, `urllib3` (requests, botocore). Each turns its request
into an ``httpx.Request`` tagged with its stack name and calls `dispatch`, which asks the
active players' respx routers, innermost first. The answer is either a response to serve (a
`ssemock.plan.serving.ReplayStream` holds the plan, served lazily in the stack's own types), or
`respx.models.PassThrough` (a route of the user's, or `Record`: send it for real
and tee the live response into the recorder).

Patches are installed when the first player starts, only for libraries already imported (a
library imported while a player is active is patched as its import completes), and removed when
the last player stops. A patch another library put over ours meanwhile (``respx.mock`` started
inside a player and stopped after it) is left alone: ours stays beneath it, inert (it calls
straight through), and removes itself the first time it runs with no player active, or at the
next player's start or stop.
"""

from __future__ import annotations

import contextvars
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from respx.models import PassThrough

from ..core.packages import fresh
from ..plan.errors import UnmatchedRequestError

if TYPE_CHECKING:
    from ..plan.grpc.record import GrpcRecorder
    from ..plan.record import Recorder
    from ..plan.websocket.record import WsRecorder

__all__ = [
    "STACKS",
    "STACK_KEY",
    "Allowed",
    "Patch",
    "Record",
    "RecordCall",
    "RecordSession",
    "WS_STACKS",
    "activate",
    "adispatch",
    "deactivate",
    "dispatch",
    "errors_of",
    "installed",
    "passing",
    "stack_of",
]

STACK_KEY = "ssemock.stack"
#: stack name (as tagged on requests) -> the library it patches, which is also the name of the
#: ssemock.stacks module that knows it. Adding a stack = a module here + its line.
STACKS: dict[str, str] = {
    "httpx": "httpcore",
    "httpx2": "httpcore2",
    "aiohttp": "aiohttp",
    "urllib3": "urllib3",
}
#: WebSocket stacks: stack name -> (the ssemock.stacks module that knows it, the library modules
#: whose import installs its patches: SDKs import the ``websockets`` client modules directly).
WS_STACKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "websockets": ("websocket.websockets_asyncio", ("websockets.asyncio.client",)),
    "websockets.sync": ("websocket.websockets_sync", ("websockets.sync.client",)),
    "websockets.legacy": ("websocket.websockets_legacy", ("websockets.legacy.client",)),
    "aiohttp.ws": ("websocket.aiohttp", ("aiohttp.connector",)),
}
_LIBRARIES = {library: library for library in STACKS.values()}  # library -> its ssemock.stacks module
_LIBRARIES.update({lib: module for module, libs in WS_STACKS.values() for lib in libs})
_LIBRARIES["httpx_ws"] = "websocket.httpx_ws"  # its sessions' timers (its handshake is the httpx stack's)
_LIBRARIES["grpc"] = "grpc"  # gRPC channels, sync and aio (ssemock.stacks.grpc)

_passing = contextvars.ContextVar("ssemock_passing", default=False)


class Router(Protocol):
    def handler(self, request: httpx.Request) -> httpx.Response: ...
    async def async_handler(self, request: httpx.Request) -> httpx.Response: ...


class Record(PassThrough):
    """Raised by a player's router: send the request to the real network and tee the response
    into ``recorder`` (``begin``, then ``chunk`` per arrival, then ``finish``)."""

    def __init__(self, request: httpx.Request, recorder: Recorder) -> None:
        super().__init__("recording", request=request, origin=None)  # type: ignore[arg-type]
        self.recorder = recorder


class RecordSession(PassThrough):
    """Raised by a player's router for a WebSocket handshake: open the real connection and tee
    both directions into ``recorder`` (a `ssemock.plan.websocket.record.WsRecorder`)."""

    def __init__(self, request: httpx.Request, recorder: WsRecorder) -> None:
        super().__init__("recording a WebSocket session", request=request, origin=None)  # type: ignore[arg-type]
        self.recorder = recorder


class RecordCall(PassThrough):
    """Raised by a player's router for a gRPC call: make the real call and tee its messages,
    metadata and status into ``recorder`` (a `ssemock.plan.grpc.record.GrpcRecorder`)."""

    def __init__(self, request: httpx.Request, recorder: GrpcRecorder) -> None:
        super().__init__("recording a gRPC call", request=request, origin=None)  # type: ignore[arg-type]
        self.recorder = recorder


class Allowed(UnmatchedRequestError):
    """Raised by a replaying player's router: no interaction matches, but the request's host is
    allowed (``allowed_hosts``), so it is sent for real unless an outer player answers it."""


@dataclass
class Patch:
    """One attribute of a library class replaced by ``make(original)`` while players are active."""

    owner: Any
    name: str
    make: Callable[[Any], Any]
    _saved: Any = field(default=None, repr=False)
    _new: Any = field(default=None, repr=False)

    def install(self) -> None:
        if self._new is not None:
            return
        self._saved = self.owner.__dict__.get(self.name, _MISSING)
        self._new = self.make(getattr(self.owner, self.name))
        setattr(self.owner, self.name, self._new)

    def uninstall(self) -> bool:
        """Restore the original; False (and nothing done) when something else patched over ours."""
        if self._new is None:
            return True
        if self.owner.__dict__.get(self.name) is not self._new:
            return False
        if self._saved is _MISSING:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self._saved)
        self._new = self._saved = None
        return True


_MISSING = object()

_routers: list[Router] = []  # the active players' routers, outermost first
_state = threading.RLock()
_patches: dict[str, list[Patch]] = {}  # library -> its installed patches


def _stack_module(stack: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{STACKS[stack]}")


def _install(library: str) -> None:
    with _state:
        if library in _patches or not _routers:
            return
        stack = importlib.import_module(f"{__name__}.{_LIBRARIES[library]}")
        _patches[library] = patches = stack.patches()
        for patch in patches:
            patch.install()


def _uninstall_all() -> None:
    global _leftover
    for library, patches in list(_patches.items()):
        if all([patch.uninstall() for patch in reversed(patches)]):  # noqa: C419  (each one, not until one fails)
            del _patches[library]
    _leftover = bool(_patches)


_leftover = False  # patches the last player could not remove (another patch was over them)


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Patches a stack's library as its import completes, while a player is active."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _LIBRARIES or fullname in _patches:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _PatchingLoader(spec.loader, fullname)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, library: str) -> None:
        self._loader, self._library = loader, library

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _install(self._library)


_watcher = _ImportWatcher()


def installed() -> list[str]:
    """The libraries whose patches are installed now (while a player is active)."""
    with _state:
        return list(_patches)


def activate(router: Router) -> None:
    """A player starts: its router answers first from now on."""
    with _state:
        if _leftover and not _routers:
            _uninstall_all()
        _routers.append(router)
        if len(_routers) == 1:
            sys.meta_path.insert(0, _watcher)
        for library in _LIBRARIES:
            if library in sys.modules:
                _install(library)


def deactivate(router: Router) -> None:
    """A player stops; the last one out removes the patches."""
    with _state:
        if router in _routers:
            _routers.remove(router)
        if not _routers:
            if _watcher in sys.meta_path:
                sys.meta_path.remove(_watcher)
            _uninstall_all()


def intercepting() -> bool:
    """Whether a stack should ask the players (some player is active and this is no pass-through).

    With no player active, an inert patch left beneath another library's removes itself here.
    """
    if _routers:
        return not _passing.get()
    if _leftover:
        with _state:
            if not _routers:
                _uninstall_all()
    return False


def dispatch(request: httpx.Request) -> httpx.Response:
    """Ask the active players, innermost first; the first that matches (or records) answers.

    Raises PassThrough (or `Record`) to send the request for real, and the innermost
    player's UnmatchedRequestError when none answers.
    """
    __tracebackhide__ = True
    first: UnmatchedRequestError | None = None
    for router in reversed(_routers):
        try:
            return router.handler(request)
        except UnmatchedRequestError as exc:
            first = first or exc
    _allowed(request, first)
    raise first or UnmatchedRequestError("ssemock: no player is active")


def _allowed(request: httpx.Request, unmatched: UnmatchedRequestError | None) -> None:
    """Send the request for real when the innermost player said its host is allowed and no
    player answered it."""
    if isinstance(unmatched, Allowed):
        raise PassThrough("allowed host", request=request, origin=None)  # type: ignore[arg-type]


async def adispatch(request: httpx.Request) -> httpx.Response:
    """`dispatch` for async stacks (a user's async side effects run on the loop)."""
    __tracebackhide__ = True
    first: UnmatchedRequestError | None = None
    for router in reversed(_routers):
        try:
            return await router.async_handler(request)
        except UnmatchedRequestError as exc:
            first = first or exc
    _allowed(request, first)
    raise first or UnmatchedRequestError("ssemock: no player is active")


@contextmanager
def passing(host: str | None = None) -> Iterator[None]:
    """Around a request sent for real: stacks beneath do not intercept it again, and the network
    lock lets its connections through; its ``host``'s name lookups too, which asyncio runs in a
    thread that does not see this context."""
    token = _passing.set(True)
    if host is not None:
        with _state:
            _passing_hosts[host] = _passing_hosts.get(host, 0) + 1
    try:
        yield
    except BaseException as exc:
        _unchain_passthrough(exc)
        raise
    finally:
        _passing.reset(token)
        if host is not None:
            with _state:
                _passing_hosts[host] -= 1
                if not _passing_hosts[host]:
                    del _passing_hosts[host]


_passing_hosts: dict[str, int] = {}  # hosts of requests being sent for real, and how many


def _unchain_passthrough(exc: BaseException) -> None:
    """Drop ssemock's control flow from ``exc``'s chain: a request sent for real is sent while
    the router's `PassThrough` (`Record`, `RecordSession`) is being handled, so its failure (a
    refused connection, an untrusted certificate) would show that internal exception first, with
    "During handling of the above exception, another exception occurred". The link skips it."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        while isinstance(link.__context__, PassThrough):
            link.__context__ = link.__context__.__context__
        link = link.__cause__ or link.__context__


def is_passing(host: str | None = None) -> bool:
    """Whether this context is sending a request for real (or, given ``host``, whether any thread
    is sending one to it)."""
    return _passing.get() or (host is not None and host in _passing_hosts)


def stack_of(request: httpx.Request) -> str:
    """Which client stack sent the request (``httpx``, ``httpx2``, ``aiohttp``, ``urllib3``)."""
    return str(request.extensions.get(STACK_KEY, "httpx"))


def errors_of(request: httpx.Request) -> Any:
    """The namespace whose ``RemoteProtocolError`` / ``ReadTimeout`` (and recorded error names)
    become the exceptions the request's own stack raises (its ``ERRORS``)."""
    return _stack_module(stack_of(request)).ERRORS


fresh(__name__)  # submodules read from sys.modules (pytester's in-process reruns drop them)

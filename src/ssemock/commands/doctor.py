"""What a bug report needs: ssemock's version, whether its C accelerator is in use (and why not),
which client stacks and extras are importable, and the versions of Python and the libraries
ssemock works with. ``ssemock --version`` prints the first lines, ``ssemock doctor`` all."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import sys
from pathlib import Path

from ..core import __version__
from ..core.extras import install_hint

__all__ = ["accelerator", "explore", "install_hint", "report", "websocket_stacks"]

#: the distributions whose versions a bug report wants, by the role they play here
LIBRARIES = {
    "core": ("httpx", "respx", "orjson", "pytest", "filelock"),
    "stacks": ("httpx2", "aiohttp", "urllib3", "requests", "botocore", "grpcio"),
    "SDKs": ("openai", "anthropic", "google-genai", "cohere", "mcp"),
    "extras": ("uvicorn", "starlette", "rich", "hypothesis", "libcst", "vcrpy", "pyyaml"),
}
#: each optional extra and a module that is there when it is installed
EXTRAS = {
    "httpx2": "httpx2",
    "aiohttp": "aiohttp",
    "requests": "requests",
    "serve": "uvicorn",
    "demo": "openai",
    "migrate": "libcst",
    "explore": "hypothesis",
    "docs": "mkdocs",
    "grpc": "grpc",
}


def accelerator() -> str:
    """Whether the C accelerator of the decoder and cassette I/O is in use, and if not, why."""
    if importlib.util.find_spec("ssemock.framing._speedups") is None:
        return (
            "pure Python: the accelerator was not built when ssemock was installed (no C compiler "
            "then); results are the same, only slower. To build it: install gcc, then reinstall ssemock"
        )
    from ..framing.accelerator import MODULE

    if MODULE is None:  # built, but it does not load here (another Python, a broken build)
        return "pure Python: the accelerator is there but does not load (another Python, or a broken build)"
    return f"C accelerator in use ({Path(MODULE.__file__ or '').name})"


def explore() -> str:
    """Whether ``explore`` (the marker's ``explore=``, ``--ssemock-explore``, ``ssemock.explore``,
    ``ssemock.strategies``) can run here: it needs hypothesis, the ``explore`` extra."""
    if importlib.util.find_spec("hypothesis") is None:
        return f"unavailable: it needs hypothesis, the 'explore' extra ({install_hint('explore')})"
    return f"available (hypothesis {_version('hypothesis') or 'of unknown version'})"


def websocket_stacks() -> list[str]:
    """One line per WebSocket stack (the registry's, then httpx-ws): the library's version and
    where ssemock hooks it, or why it cannot (not installed, a version it does not support)."""
    import importlib

    from .. import stacks

    now = stacks.installed()
    lines = []
    for name, (module, libraries) in stacks.WS_STACKS.items():
        distribution = libraries[0].split(".")[0]
        version = _version(distribution)
        if version is None:
            lines.append(f"  {name}: not installed ({distribution})")
            continue
        try:
            where = importlib.import_module(f"ssemock.stacks.{module}").hook()
        except ImportError as exc:
            lines.append(f"  {name}: {distribution} {version}, not hooked: {exc}")
            continue
        active = " (patched now)" if any(lib in now for lib in libraries) else ""
        lines.append(f"  {name}: {distribution} {version}, hook {where}{active}")
    version = _version("httpx-ws")
    lines.append(
        f"  httpx-ws: httpx-ws {version}, through the httpx stack (its upgrade request, at the httpcore pool), "
        "hook WebSocketSession.receive, AsyncWebSocketSession.receive"
        if version
        else "  httpx-ws: not installed (httpx-ws)"
    )
    return lines


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def report(*, full: bool = True) -> list[str]:
    """The lines ``ssemock doctor`` prints (``full=False``: what ``ssemock --version`` prints)."""
    lines = [
        f"ssemock {__version__} ({Path(__file__).resolve().parents[1]})",
        f"accelerator: {accelerator()}",
        f"python: {platform.python_implementation()} {platform.python_version()} ({sys.executable})",
    ]
    if not full:
        return lines
    present = [name for name, module in EXTRAS.items() if importlib.util.find_spec(module) is not None]
    missing = [name for name in EXTRAS if name not in present]
    lines.append(f"extras importable: {', '.join(present) or 'none'}")
    if missing:
        lines.append(f"extras missing: {', '.join(missing)} ({install_hint('NAME')})")
    lines.append(f"explore: {explore()}")
    for role, names in LIBRARIES.items():
        found = [f"{name} {version}" for name in names if (version := _version(name))]
        lines.append(f"{role}: {', '.join(found) or 'none installed'}")
    lines.append("websocket stacks (patched while a player is active):")
    lines += websocket_stacks()
    return lines

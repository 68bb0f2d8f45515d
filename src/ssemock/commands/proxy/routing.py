"""Where the proxy sends a request: the upstream whose path prefix the request's path starts
with at a segment boundary (``/openai`` routes ``/openai`` and ``/openai/...``, never
``/openai@evil.example/x`` nor ``/openai.evil.example/x``), and the URL it is forwarded to: the
rest of the path, as the client sent it (percent-encoding kept, what a URL path cannot hold
percent-encoded), joined as a path onto the upstream's URL, never concatenated onto its
authority. A URL whose scheme, host or port would not be the upstream's, as urllib (so the
``websockets`` client) and httpx each parse it, or whose dot segments climb out of the
upstream's base path, is refused (`OffUpstream`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes, urlsplit, urlunsplit

import httpx

__all__ = ["OffUpstream", "Routed", "Upstream", "check_upstream_url", "forward_url", "pick", "raw_target"]

_PATH_SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986 pchar and "/", "%" kept: the client's escapes stay
_QUERY_SAFE = _PATH_SAFE + "?"


@dataclass(frozen=True)
class Upstream:
    """One upstream behind the proxy: requests whose path starts with ``prefix`` go to ``url``
    (the prefix removed), recorded into ``cassette`` unless the client names another."""

    url: str
    """The upstream's base URL (``https://api.openai.com``; a path is kept before the request's)."""
    prefix: str = ""
    """The proxy path prefix routed to it ("" routes every path); it matches whole segments."""
    cassette: str = "proxy"
    """The cassette name used when the client names none."""


@dataclass(frozen=True)
class Routed:
    """Where one request goes."""

    upstream: Upstream
    """The upstream whose prefix routed it."""
    url: str
    """The URL it is forwarded to (`forward_url`)."""
    cassette: str
    """The cassette it records into and replays from."""


class OffUpstream(ValueError):
    """A request target whose forwarded URL would leave its upstream (another scheme, host or
    port, or above the upstream's base path): refused, never forwarded."""


def check_upstream_url(url: str) -> None:
    """A ValueError unless ``url`` is ``http(s)://host[:port][/path]`` (no query, no fragment:
    the request's path is joined onto it)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the upstream URL {url!r} must start with http:// or https:// and name a host")
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        raise ValueError(f"the upstream URL {url!r} must have no query or fragment (the request's are used)")


def raw_target(scope: Mapping[str, Any]) -> tuple[str, str]:
    """The path and query of an ASGI request as the client sent them (latin-1 text of the raw
    bytes); the path is re-encoded from the decoded one when the server gives no ``raw_path``."""
    raw = scope.get("raw_path") or quote_from_bytes(scope["path"].encode("utf-8"), safe=_PATH_SAFE).encode()
    return raw.decode("latin-1"), scope.get("query_string", b"").decode("latin-1")


def pick(upstreams: Sequence[Upstream], path: str) -> tuple[Upstream, str] | None:
    """The upstream routing ``path`` (the raw path, as sent) and the rest of the path after its
    prefix ("/" at least); the longest prefix first, then the upstream without one (it routes
    every path). None: no prefix matches at a segment boundary, and none routes every path."""
    for upstream in sorted(upstreams, key=lambda u: len(u.prefix.rstrip("/")), reverse=True):
        prefix = upstream.prefix.rstrip("/")
        if not prefix or path == prefix or path.startswith(prefix + "/"):
            return upstream, path[len(prefix) :] or "/"
    return None


def forward_url(base: str, rest: str, query: str = "", *, websocket: bool = False) -> str:
    """The URL a request is forwarded to: ``rest`` (a raw path starting with "/") joined as a
    path onto the upstream URL ``base``, with the raw ``query``; ``ws://``/``wss://`` for a
    WebSocket. Raises `OffUpstream` when the result would leave the upstream."""
    if not rest.startswith("/"):
        raise OffUpstream(f"the request target {rest[:80]!r} is not a path (it must start with '/')")
    parts = urlsplit(base)
    base_path = parts.path.rstrip("/")
    path = base_path + quote_from_bytes(rest.encode("latin-1", "replace"), safe=_PATH_SAFE)
    if not _under(path, base_path):
        raise OffUpstream(f"the path {rest[:80]!r} climbs out of the upstream's {base_path or '/'}")
    scheme = {"http": "ws", "https": "wss"}[parts.scheme] if websocket else parts.scheme
    query = quote_from_bytes(query.encode("latin-1", "replace"), safe=_QUERY_SAFE)
    url = urlunsplit((scheme, parts.netloc, path, query, ""))
    if _origin(url) != _origin(urlunsplit((scheme, parts.netloc, base_path or "/", "", ""))):
        raise OffUpstream(f"the request target {rest[:80]!r} would leave the upstream {parts.netloc}")
    return url


def _under(path: str, base: str) -> bool:
    """Whether ``path`` stays under ``base`` once its dot segments are resolved (RFC 3986 5.2.4)."""
    kept: list[str] = []
    for segment in path.split("/")[1:]:
        dots = segment.lower().replace("%2e", ".")  # (servers that decode %2e read it as a dot)
        if dots == "..":
            if not kept:
                return False
            kept.pop()
        elif dots != ".":
            kept.append(segment)
    resolved = "/" + "/".join(kept)
    return not base or resolved == base or resolved.startswith(base + "/")


def _origin(url: str) -> tuple[tuple[str, str, int | None], ...]:
    """The scheme, host and port of ``url`` as urllib (the ``websockets`` client's parser) and as
    httpx read it; any parser's failure is a refusal."""
    try:
        split = urlsplit(url)
        parsed = httpx.URL(url)
        return (
            (split.scheme, (split.hostname or "").lower(), split.port),
            (parsed.scheme, parsed.host.lower(), parsed.port),
        )
    except (ValueError, httpx.InvalidURL) as exc:
        raise OffUpstream(f"the forwarded URL is not one URL ({type(exc).__name__})") from None

"""The addresses of WebSocket links: ``ws://host:port/path`` and ``wss://...``, parsed for
dialing or listening, and the SSL context each needs (or refuses)."""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

from .errors import AddressError

__all__ = ["check_tls", "parse_websocket"]


def parse_websocket(address: str, *, listening: bool) -> tuple[str, str, int, str]:
    """Scheme, host, port and path of a ``ws://`` or ``wss://`` address."""
    parts = urlsplit(address)
    if parts.scheme not in ("ws", "wss") or parts.query or parts.fragment:
        raise AddressError(f"expected ws://HOST:PORT/PATH or wss://..., got {address!r}")
    try:
        port = parts.port
    except ValueError as exc:
        raise AddressError(f"{address!r}: {exc}") from None
    host = parts.hostname
    if not host:
        raise AddressError(f"{address!r} has no host")
    if port is None:
        port = 443 if parts.scheme == "wss" else 80
    if port == 0 and not listening:
        raise AddressError(f"{address!r}: cannot dial port 0")
    return parts.scheme, host, port, parts.path or "/"


def check_tls(scheme: str, ssl_context: ssl.SSLContext | None, *, listening: bool) -> None:
    """Refuse a context on ``ws``, and no context for listening on ``wss``."""
    if scheme == "ws" and ssl_context is not None:
        raise ValueError("ssl_context given for a plain ws:// address; use wss://")
    if scheme == "wss" and listening and ssl_context is None:
        raise ValueError("listening on wss:// needs a server ssl_context (certificate and key)")

"""The TLS rule of transports without TLS."""

from __future__ import annotations

import ssl

__all__ = ["refuse_tls"]


def refuse_tls(ssl_context: ssl.SSLContext | None, schemes: str) -> None:
    """Raise ValueError when an SSL context is passed to a transport without TLS."""
    if ssl_context is not None:
        raise ValueError(f"{schemes} links do not use TLS; pass ssl_context only for wss://")

"""The TLS rule of transports without TLS."""

from __future__ import annotations

import ssl

from ..errors import HandshakeError

__all__ = ["refuse_tls", "tls_refusal"]


def refuse_tls(ssl_context: ssl.SSLContext | None, schemes: str) -> None:
    """Raise ValueError when an SSL context is passed to a transport without TLS."""
    if ssl_context is not None:
        raise ValueError(f"{schemes} links do not use TLS; pass ssl_context only for wss://")


def tls_refusal(address: str, error: ssl.SSLError) -> HandshakeError | None:
    """The refusal a dial of ``address`` met in its TLS handshake when no retry can change
    it (nothing speaking TLS answered; the server's certificate is not trusted), else
    ``None``."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return HandshakeError("tls", f"the certificate of {address} was not verified "
                              f"({error.verify_message}): the ssl_context must trust the "
                              "CA that signed the members' certificates, for that host name")
    if error.reason == "WRONG_VERSION_NUMBER":
        return HandshakeError("tls", f"{address} did not answer in TLS: it is a plain link "
                              "or HTTP address; dial a member's tls:// or wss:// address")
    return None

"""How a node's links are set up: TLS contexts and the transports of its address schemes.

:func:`check_schemes` refuses, at construction, addresses a node could not use with
its settings (a scheme no transport serves, ``tls://`` or ``wss://`` without TLS files,
a plain address beside TLS ones). :func:`tls_contexts` makes the listener's and
dialer's contexts (for ``webrtc+wss://`` the TLS is the signaling connection's, so both
are client contexts). :func:`scheme_table` gives the WebRTC transport the node's ICE servers and
signaling token (``None``: the default transports).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from typing import Any

from lazily_transports import (
    DEFAULT_SCHEMES,
    TLS_SCHEMES,
    AddressError,
    SchemeTable,
    TLSConfigError,
    TLSFiles,
    scheme_of,
)

from .errors import InvalidConfiguration


def link_scheme(what: str, address: str) -> str:
    """``address``'s scheme; raises :class:`InvalidConfiguration` naming ``what`` when it
    has none or no transport serves it (``http://``, say)."""
    try:
        scheme = scheme_of(address)
        if scheme not in DEFAULT_SCHEMES:
            DEFAULT_SCHEMES.transport(scheme)  # raises, naming the schemes served
    except AddressError as exc:
        raise InvalidConfiguration(f"{what}: {exc}") from None
    return scheme


def check_schemes(node_id: str, listen: str | None, peers: Mapping[str, str],
                  tls: TLSFiles | None) -> None:
    """Raise :class:`InvalidConfiguration` for addresses of no transport, or that these
    TLS settings cannot serve."""
    addresses = {f"listen address of node {node_id}": listen} if listen else {}
    addresses.update({f"address of peer {p}": a for p, a in peers.items()})
    for what, address in addresses.items():
        scheme = link_scheme(what, address)
        if tls is None and scheme in ("tls", "wss"):
            raise InvalidConfiguration(
                f"{what} {address!r} uses TLS: pass tls=TLSFiles(certificate=..., key=..., "
                "ca=...) (TOML: a [tls] table)")
        if tls is not None and scheme not in TLS_SCHEMES:
            raise InvalidConfiguration(
                f"{what} {address!r} does not use TLS but TLS files are given: use tls://, "
                "wss:// or webrtc+wss:// for every member")


def tls_contexts(tls: TLSFiles | None, listen: str | None
                 ) -> tuple[ssl.SSLContext | None, ssl.SSLContext | None]:
    """The listener's and the dialers' SSL contexts (``None, None`` without TLS)."""
    if tls is None:
        return None, None
    try:
        client = tls.client_context()
        if listen is not None and scheme_of(listen) == "webrtc+wss":
            return client, client  # the listener's TLS is its signaling connection
        return tls.server_context(), client
    except TLSConfigError as exc:
        raise InvalidConfiguration(str(exc)) from None


def scheme_table(ice_servers: Sequence[Mapping[str, Any]] | None,
                 signaling_token: str | None) -> SchemeTable | None:
    """The default transports, but WebRTC links use ``ice_servers`` (STUN/TURN as
    mappings: ``urls``, ``username``, ``credential``) and send ``signaling_token`` to the
    signaling server; ``None`` when neither is given."""
    if not ice_servers and signaling_token is None:
        return None
    try:
        from lazily_transports.webrtc import IceSettings, WebRTCTransport
        from lazily_transports.webrtc.ice import ice_servers_from

        servers = ice_servers_from(list(ice_servers or ()))
        transport = WebRTCTransport(IceSettings(ice_servers=servers),
                                    signaling_token=signaling_token)
    except (ImportError, ValueError) as exc:
        raise InvalidConfiguration(f"WebRTC settings: {exc}") from None
    table = DEFAULT_SCHEMES
    for scheme in ("webrtc", "webrtc+ws", "webrtc+wss"):
        table = table.with_transport(scheme, transport)
    return table


class LinkSettings:
    """A node's checked link settings; :meth:`mesh_options` are the mesh's arguments."""

    def __init__(self, node_id: str, listen: str | None, peers: Mapping[str, str],
                 tls: TLSFiles | None, ice_servers: Sequence[Mapping[str, Any]] | None,
                 signaling_token: str | None) -> None:
        check_schemes(node_id, listen, peers, tls)
        self.listen = listen
        self.tls = tls
        self.schemes = scheme_table(ice_servers, signaling_token)

    def mesh_options(self) -> dict[str, Any]:
        server, client = tls_contexts(self.tls, self.listen)
        return {"ssl_context": server, "client_ssl_context": client, "schemes": self.schemes}

"""ICE plumbing for aiortc peer connections: explicit host candidates, no implicit servers.

aioice enumerates interfaces itself and skips ``127.0.0.1`` and ``::1``, so on a
loopback-only host ICE never leaves ``new``; ``IceSettings.host_addresses`` names the
addresses to gather host candidates on instead. aiortc falls back to a public STUN
server when given no configuration; here ICE servers only ever come from the caller.
aioice sizes its UDP receive buffers at 256 KiB, which drops datagrams during loopback
bursts and stalls SCTP for its retransmission timeout; ``receive_buffer`` raises it.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection

__all__ = ["IceSettings", "ice_servers_from", "install_gatherer", "new_peer_connection"]

_log = logging.getLogger("lazily_transports.webrtc")

_installed: weakref.WeakSet[Any] = weakref.WeakSet()
_AIOICE_INTERNALS = (
    "_local_candidates",
    "_local_candidates_start",
    "_local_candidates_end",
    "_components",
    "_protocols",
    "get_component_candidates",
)


@dataclass(frozen=True, slots=True)
class IceSettings:
    """How a peer connection finds its candidates.

    ``host_addresses``: local IP addresses to offer as host candidates (``None``:
    aioice's own interface enumeration, which never includes loopback).
    ``ice_servers``: STUN/TURN servers, none by default. ``receive_buffer`` and
    ``send_buffer``: ``SO_RCVBUF`` / ``SO_SNDBUF`` for every ICE socket, in bytes
    (the kernel may cap them at ``net.core.rmem_max`` / ``wmem_max``).
    """

    host_addresses: tuple[str, ...] | None = None
    ice_servers: tuple[RTCIceServer, ...] = ()
    receive_buffer: int = 4 * 1024 * 1024
    send_buffer: int = 1024 * 1024

    def __post_init__(self) -> None:
        if self.host_addresses is not None:
            if isinstance(self.host_addresses, str) or not isinstance(
                self.host_addresses, Sequence
            ):
                raise TypeError("host_addresses must be a sequence of IP address strings")
            if not self.host_addresses:
                raise ValueError("host_addresses must not be empty (use None for autodetect)")
            for address in self.host_addresses:
                try:
                    ipaddress.ip_address(address)
                except ValueError:
                    raise ValueError(
                        f"ICE host address must be an IP literal, got {address!r}"
                    ) from None
            object.__setattr__(self, "host_addresses", tuple(self.host_addresses))
        for server in self.ice_servers:
            if not isinstance(server, RTCIceServer):
                raise TypeError(f"ice_servers must hold RTCIceServer, got {server!r}")
        object.__setattr__(self, "ice_servers", tuple(self.ice_servers))
        if self.receive_buffer < 0 or self.send_buffer < 0:
            raise ValueError("socket buffer sizes must be >= 0 (0 keeps aioice's size)")


_ICE_SCHEMES = ("stun:", "stuns:", "turn:", "turns:")


def ice_servers_from(entries: Sequence[Mapping[str, Any]]) -> tuple[RTCIceServer, ...]:
    """``RTCIceServer`` objects from plain mappings: ``urls`` (a URL or a list of
    ``stun:``/``turn:`` URLs) and, for TURN, ``username`` and ``credential``."""
    servers = []
    for i, entry in enumerate(entries):
        unknown = set(entry) - {"urls", "username", "credential"}
        if unknown:
            raise ValueError(f"ICE server {i}: unknown key(s) {', '.join(sorted(unknown))}")
        urls = entry.get("urls")
        urls = [urls] if isinstance(urls, str) else urls
        if not isinstance(urls, Sequence) or not urls or not all(
                isinstance(u, str) and u.startswith(_ICE_SCHEMES) for u in urls):
            raise ValueError(f"ICE server {i}: urls must be stun:/stuns:/turn:/turns: URLs, "
                             f"not {entry.get('urls')!r}")
        username, credential = entry.get("username"), entry.get("credential")
        if any(u.startswith("turn") for u in urls) and not (username and credential):
            raise ValueError(f"ICE server {i}: a TURN server needs a username and credential")
        servers.append(RTCIceServer(urls=list(urls), username=username, credential=credential))
    return tuple(servers)


def new_peer_connection(settings: IceSettings) -> RTCPeerConnection:
    """An ``RTCPeerConnection`` that contacts exactly the configured ICE servers."""
    return RTCPeerConnection(RTCConfiguration(iceServers=list(settings.ice_servers)))


def install_gatherer(pc: RTCPeerConnection, settings: IceSettings) -> None:
    """Make ``pc`` gather on ``settings.host_addresses`` and size its sockets.

    Call after the SCTP transport exists (``createDataChannel`` on the offering
    side, ``setRemoteDescription`` on the answering side) and before
    ``setLocalDescription``, which runs the gathering.
    """
    sctp = pc.sctp
    if sctp is None:
        raise RuntimeError("the peer connection has no SCTP transport yet")
    connection = sctp.transport.transport.iceGatherer._connection
    missing = [name for name in _AIOICE_INTERNALS if not hasattr(connection, name)]
    if missing:
        raise RuntimeError(f"unsupported aioice version: Connection lacks {missing}")
    if connection in _installed:
        return
    original = connection.gather_candidates

    async def gather_candidates() -> None:
        if connection._local_candidates_start:
            return
        if settings.host_addresses is None:
            await original()
        else:
            connection._local_candidates_start = True
            for component in connection._components:
                connection._local_candidates += await connection.get_component_candidates(
                    component=component, addresses=list(settings.host_addresses)
                )
        _size_sockets(connection._protocols, settings)
        connection._local_candidates_end = True
        if not connection._local_candidates:
            _log.warning(
                "no ICE host candidates gathered (host_addresses=%s)", settings.host_addresses
            )

    connection.gather_candidates = gather_candidates  # type: ignore[method-assign]
    _installed.add(connection)


def _size_sockets(protocols: Sequence[Any], settings: IceSettings) -> None:
    for protocol in protocols:
        transport = getattr(protocol, "transport", None)
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is None:
            continue
        for option, size in (
            (socket.SO_RCVBUF, settings.receive_buffer),
            (socket.SO_SNDBUF, settings.send_buffer),
        ):
            if size:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, option, size)
                except OSError as exc:
                    _log.debug("cannot set socket buffer %s=%d: %s", option, size, exc)

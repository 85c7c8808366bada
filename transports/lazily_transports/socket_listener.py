"""The listening socket of ``unix:``, ``tcp:`` and ``tls:`` links: closed, it removes
its Unix socket file, unless another listener's took its place."""

from __future__ import annotations

import asyncio
import os

from ._core._admission import AdmissionGate
from .abc import Listener
from .socket_addresses import socket_inode

__all__ = ["SocketListener"]


class SocketListener(Listener):
    """A listening Unix or TCP socket; on ``tls:`` ``handshakes`` caps the connections
    still in their TLS handshake."""

    handshakes: AdmissionGate | None = None

    def __init__(self, server: asyncio.AbstractServer, address: str, path: str | None) -> None:
        self._server = server
        self._address = address
        self._path = path
        self._inode = socket_inode(path) if path else None

    @property
    def address(self) -> str:
        return self._address

    async def aclose(self) -> None:
        self._server.close()
        if (self._path is not None and self._inode is not None
                and socket_inode(self._path) == self._inode):
            try:
                os.unlink(self._path)
            except OSError:
                pass


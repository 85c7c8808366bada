"""The HTTP front of a node process: the status page, ``/status.json``, ``/metrics`` and
the admin routes, behind :mod:`.http_gate`.

Its port is bound and listened on by :meth:`HttpFront.bind` before the node starts, so
a port in use stops the start before the node joins its cluster and no other socket can
take it while the node starts; it serves from :meth:`HttpFront.start`, once the node and
its monitor run (a connection made before waits until then).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lazily_transports import AdmissionGate
from lazily_transports.socket_addresses import format_tcp

from . import http_gate
from .config import ConfigError, NodeConfig

if TYPE_CHECKING:
    from .monitor import Monitor
    from .node import Node

#: Seconds an HTTP connection may sit idle or half-way through its request headers, and
#: wait in all for its reader to take its answers.
HTTP_IDLE_TIMEOUT = 15.0
#: Open HTTP connections in all, and from one IP address (see :mod:`.http_gate`).
HTTP_MAX_CONNECTIONS = 256
HTTP_MAX_PER_SOURCE = 32
#: Header lines of one request (each at most 8,190 bytes, aiohttp's bound): a stranger's
#: connections held half-way through their headers hold at most this many each.
HTTP_MAX_HEADERS = 32


class HttpFront:
    """The ``http`` address of ``config`` (nothing when it has none)."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self._server: asyncio.Server | None = None
        self._runner: Any = None
        #: The server's connections (``None`` until bound).
        self.connections: http_gate.Connections | None = None
        #: The URL of the address the server is bound to (``None`` until it serves).
        self.bound: str | None = None

    async def bind(self) -> None:
        """Bind and listen on the port (nothing is served yet); :class:`ConfigError` when
        it cannot be."""
        if self.config.http is None:
            return
        try:
            import aiohttp  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{self.config.source}: `http` needs aiohttp: pip install -e '.[aiohttp]' "
                "in the lazily-queue clone (or remove `http`)"
            ) from None
        host, port = self.config.http
        gate = AdmissionGate(HTTP_MAX_CONNECTIONS, HTTP_MAX_PER_SOURCE, label="http")
        self.connections = http_gate.Connections(gate, stall_limit=HTTP_IDLE_TIMEOUT)
        try:
            self._server = await http_gate.serve(self._protocol, host, port,
                                                 self.connections, start_serving=False)
        except OSError as exc:
            raise ConfigError(
                f"{self.config.source}: cannot serve HTTP on `http` = {host}:{port}: "
                f"{exc.strerror or exc}; choose a free port"
            ) from None

    def _protocol(self) -> Any:
        return self._runner.server()

    async def start(self, node: Node, monitor: Monitor, admin_token: str | None) -> str | None:
        """Serve ``node``'s pages; the bound URL (``None`` without ``http``)."""
        if self._server is None:
            return None
        from aiohttp import web

        from .integrations.aiohttp import MONITOR, NODE, add_monitor_routes, host_guard
        from .integrations.aiohttp_admin import add_admin_routes
        from .integrations.aiohttp_log import server_logger

        assert self.config.http is not None
        host = self.config.http[0]
        names = http_gate.own_names(host, self.config.http_advertise)
        app = web.Application(middlewares=[host_guard(names)])
        app[NODE] = node
        app[MONITOR] = monitor
        add_monitor_routes(app, status_prefix="")
        advertised = self.config.http_advertise
        add_admin_routes(app, admin_token, origins=() if advertised is None else (advertised,))
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=HTTP_IDLE_TIMEOUT,
                               max_headers=HTTP_MAX_HEADERS, logger=server_logger())
        await runner.setup()
        self._runner = runner
        await self._server.start_serving()
        sockname = self._server.sockets[0].getsockname()
        self.bound = format_tcp(sockname, "http")
        bound = sockname[1]
        return f"http://{host}:{bound}" if ":" not in host else f"http://[{host}]:{bound}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

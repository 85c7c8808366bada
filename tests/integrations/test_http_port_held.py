"""The HTTP port of ``lazily-queue node`` is the node's from the moment it is bound, before
the node starts: no other socket can take it in between, even one reusing addresses."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from lazily_queue.node import Node
from lazily_queue.service import NodeService

from .test_service_http import one_node, status_of


async def test_no_socket_takes_the_http_port_while_the_node_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    refused: list[OSError] = []
    start_node = NodeService._start_node

    async def squat_then_start(service: NodeService, node: Node) -> None:
        server = service._http._server
        assert server is not None
        try:  # the port is bound, the node not yet serving from it
            squatter.bind(("127.0.0.1", server.sockets[0].getsockname()[1]))
            squatter.listen()
        except OSError as exc:
            refused.append(exc)
        await start_node(service, node)

    monkeypatch.setattr(NodeService, "_start_node", squat_then_start)
    try:
        async with one_node(tmp_path, monkeypatch) as (host, port):
            assert await status_of(host, port) == b"HTTP/1.1 200 OK"
    finally:
        squatter.close()
    assert [exc.errno for exc in refused] == [errno.EADDRINUSE]

"""Pub/sub fan-out over server-sent events (aiohttp) on a replicated topic.

``POST /publish {"text": "hi"}`` publishes on the topic ``chat``; every client of
``GET /events`` on any process of the app receives it as an SSE ``data:`` line. Each
connection is an ephemeral subscriber that is forgotten when the client leaves.

Run one ephemeral node::

    python examples/sse_fanout.py           # then: curl -N http://127.0.0.1:8080/events

or as a client of a running cluster (its members list a ``[[client]]`` named ``sse``)::

    SSE_TOKEN=... python examples/sse_fanout.py --connect unix:///run/orders/1.sock
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import socket

from aiohttp import web

from lazily_queue import ClusterClient, Credentials, Node, connect
from lazily_queue.integrations.aiohttp import setup, setup_client

_connections = itertools.count(1)
SOURCE = web.AppKey("chat.source", object)
NAME = web.AppKey("chat.name", str)


def _source(request: web.Request) -> Node | ClusterClient:
    source = request.app[SOURCE]
    assert isinstance(source, Node | ClusterClient)
    return source


async def publish(request: web.Request) -> web.Response:
    body = await request.json()
    offset = await _source(request).topic("chat").publish({"text": str(body["text"])})
    return web.json_response({"offset": offset}, status=201)


async def events(request: web.Request) -> web.StreamResponse:
    chat = _source(request).topic("chat")
    subscriber = f"sse-{request.app[NAME]}-{next(_connections)}"
    await chat.subscribe(subscriber, "ephemeral")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
    await response.prepare(request)
    await response.write(b": subscribed\n\n")
    try:
        async for message in chat.stream(subscriber):
            await response.write(f"data: {json.dumps(message)}\n\n".encode())
    finally:
        with contextlib.suppress(Exception):
            await chat.disconnect(subscriber)
    return response


def create_app(source: Node | ClusterClient) -> web.Application:
    """The fan-out over ``source``: a member, or a client of one."""
    app = web.Application()
    app[SOURCE] = source
    if isinstance(source, Node):
        app[NAME] = source.node_id
        setup(app, source, status_prefix="/cluster")
    else:
        app[NAME] = f"{socket.gethostname()}-{os.getpid()}"
        setup_client(app, source)
    app.router.add_post("/publish", publish)
    app.router.add_get("/events", events)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--connect", metavar="ADDRESSES",
                        help="members to connect to as client 'sse' (comma-separated; the "
                             "token from SSE_TOKEN)")
    args = parser.parse_args()
    source: Node | ClusterClient
    if args.connect:
        source = connect(args.connect.split(","), Credentials.from_env("sse", "SSE_TOKEN"))
    else:
        source = Node(1, data_dir=None, durability="none", listen="unix:sse.sock",
                      secret="dev")
    web.run_app(create_app(source), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()

"""Pub/sub fan-out over server-sent events (aiohttp) on a replicated topic.

``POST /publish {"text": "hi"}`` publishes on the topic ``chat``; every client of
``GET /events`` on any process of the app receives it as an SSE ``data:`` line. Each
connection is an ephemeral subscriber that is forgotten when the client leaves: a
comment line every ``heartbeat`` seconds finds a closed connection even on a quiet
topic (``web.run_app`` does not cancel a handler whose client left) and keeps proxies
from closing an idle stream.

Run one ephemeral node::

    python examples/sse_fanout.py           # then: curl -N http://127.0.0.1:8080/events

as one member of a cluster::

    python examples/sse_fanout.py --config node1.toml --port 8081

or as a client of a running cluster (its members list a ``[[client]]`` named ``sse`` with
``produce`` and ``consume`` on ``chat``)::

    SSE_TOKEN=... python examples/sse_fanout.py --connect unix:///run/orders/1.sock
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import socket
import sys

from aiohttp import web

from lazily_queue import ClusterClient, Credentials, LazilyQueueError, Node, connect
from lazily_queue.integrations.aiohttp import setup, setup_client

_connections = itertools.count(1)
SOURCE = web.AppKey("chat.source", object)
NAME = web.AppKey("chat.name", str)
HEARTBEAT = web.AppKey("chat.heartbeat", float)


def _source(request: web.Request) -> Node | ClusterClient:
    source = request.app[SOURCE]
    assert isinstance(source, Node | ClusterClient)
    return source


async def publish(request: web.Request) -> web.Response:
    try:
        body = await request.json()
        text = body["text"]
    except (ValueError, TypeError, KeyError):
        return web.json_response({"error": 'send a JSON object {"text": "..."}'}, status=400)
    offset = await _source(request).topic("chat").publish({"text": str(text)})
    return web.json_response({"offset": offset}, status=201)


async def events(request: web.Request) -> web.StreamResponse:
    chat = _source(request).topic("chat")
    subscriber = f"sse-{request.app[NAME]}-{next(_connections)}"
    await chat.subscribe(subscriber, "ephemeral")
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})

    async def forward() -> None:
        async for message in chat.stream(subscriber):
            await response.write(f"data: {json.dumps(message)}\n\n".encode())

    forwarding: asyncio.Task[None] | None = None
    try:
        await response.prepare(request)
        await response.write(b": subscribed\n\n")
        forwarding = asyncio.create_task(forward())
        while not forwarding.done():
            await asyncio.wait({forwarding}, timeout=request.app[HEARTBEAT])
            if not forwarding.done():
                await response.write(b": heartbeat\n\n")  # raises once the client left
        await forwarding
    except ConnectionError:
        pass  # the client left
    finally:
        if forwarding is not None:
            forwarding.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await forwarding
        with contextlib.suppress(Exception):
            await chat.disconnect(subscriber)
    return response


def create_app(source: Node | ClusterClient, *, heartbeat: float = 15.0) -> web.Application:
    """The fan-out over ``source``: a member, or a client of one."""
    app = web.Application()
    app[SOURCE] = source
    app[HEARTBEAT] = heartbeat
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
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--config", help="a `lazily-queue node` TOML file: run as that member")
    where.add_argument("--connect", metavar="ADDRESSES",
                       help="members to connect to as client 'sse' (comma-separated; the "
                            "token from SSE_TOKEN)")
    args = parser.parse_args()
    try:
        web.run_app(create_app(source_of(args)), host="127.0.0.1", port=args.port)
    except LazilyQueueError as exc:  # no token or secret, refused credentials, no member
        sys.exit(f"sse_fanout.py: {type(exc).__name__}: {exc}")


def source_of(args: argparse.Namespace) -> Node | ClusterClient:
    """The client, the configured member or the ephemeral node the arguments name."""
    if args.connect:
        return connect(args.connect.split(","), Credentials.from_env("sse", "SSE_TOKEN"))
    if args.config:
        from lazily_queue.config import load_config

        return load_config(args.config).node()
    return Node(1, data_dir=None, durability="none", listen="unix:sse.sock", secret="dev")


if __name__ == "__main__":
    main()

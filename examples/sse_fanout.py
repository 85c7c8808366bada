"""Pub/sub fan-out over server-sent events (aiohttp) on a replicated topic.

``POST /publish {"text": "hi"}`` publishes on the topic ``chat``; every client of
``GET /events`` on any node of the app receives it as an SSE ``data:`` line. Each
connection is an ephemeral subscriber that is forgotten when the client leaves.

Run one ephemeral node::

    python examples/sse_fanout.py           # then: curl -N http://127.0.0.1:8080/events
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json

from aiohttp import web

from lazily_queue import Node
from lazily_queue.integrations.aiohttp import NODE, setup

_connections = itertools.count(1)


async def publish(request: web.Request) -> web.Response:
    body = await request.json()
    offset = await request.app[NODE].topic("chat").publish({"text": str(body["text"])})
    return web.json_response({"offset": offset}, status=201)


async def events(request: web.Request) -> web.StreamResponse:
    node = request.app[NODE]
    chat = node.topic("chat")
    subscriber = f"sse-{node.node_id}-{next(_connections)}"
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


def create_app(node: Node) -> web.Application:
    app = web.Application()
    setup(app, node, status_prefix="/cluster")
    app.router.add_post("/publish", publish)
    app.router.add_get("/events", events)
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    node = Node(1, data_dir=None, durability="none", listen="unix:sse.sock", secret="dev")
    web.run_app(create_app(node), host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()

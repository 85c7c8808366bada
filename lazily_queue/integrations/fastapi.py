"""FastAPI integration: a lifespan that runs the node, dependencies that hand out cells.

::

    from typing import Annotated
    from fastapi import Depends, FastAPI
    from lazily_queue.integrations.fastapi import add_monitor_routes, lifespan, work_queue

    node = Node(1, data_dir="data/1", peers=..., secret=...)
    app = FastAPI(lifespan=lifespan(node))
    add_monitor_routes(app)                          # GET /metrics

    Jobs = Annotated[WorkQueueCell, Depends(work_queue("jobs", visibility_timeout=30))]

    @app.post("/jobs")
    async def submit(job: dict, jobs: Jobs) -> dict:
        return {"id": await jobs.push(job)}

:func:`lifespan` starts the node before the application serves and stops it after;
``then`` is another lifespan (your own: worker tasks, connections) entered while the
node runs. The node is ``app.state.lazily_node``; :func:`get_node` is its dependency.

An application that is not a cluster member passes a client instead
(``lifespan(lazily_queue.connect(addresses, credentials))``): the same dependencies
hand out its cells; :func:`get_client` is its dependency. Run it with as many web
workers as you like (``uvicorn --workers 4``): each process is a client of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

try:
    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse, JSONResponse, Response
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "lazily_queue.integrations.fastapi needs FastAPI: pip install -e '.[fastapi]' in "
        "the lazily-queue clone"
    ) from exc

from ..cells.queue import QueueCell
from ..cells.topic import TopicCell
from ..cells.work_queue import WorkQueueCell
from ..client.cluster import ClusterClient
from ..monitor import PAGE_HEADERS, BadRequest, Monitor, page_interval, since_param
from ..node import Node
from ..object_listing import page_params
from ..subscriber_listing import BadListing, UnknownTopic, listing_params
from ..vitals_proof import NONCE_HEADER

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[Any]]


def lifespan(node: Node | ClusterClient, then: Lifespan | None = None) -> Lifespan:
    """A FastAPI lifespan running ``node`` (or linking a client) and then ``then`` for
    the app's lifetime."""
    return _Lifespan(node, then)


class _Lifespan:
    """What :func:`lifespan` returns: ``source`` is the node or client it runs, read by
    :func:`add_monitor_routes` to refuse a client's app at once."""

    def __init__(self, source: Node | ClusterClient, then: Lifespan | None) -> None:
        self.source = source
        self.then = then

    def __call__(self, app: FastAPI) -> AbstractAsyncContextManager[dict[str, Any]]:
        return self._run(app)

    @asynccontextmanager
    async def _run(self, app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        node, then = self.source, self.then
        if isinstance(node, ClusterClient):
            if getattr(app.state, "lazily_monitor_routes", False):
                raise _client_monitor(node)  # routes added before this lifespan was set
            app.state.lazily_client = node
            async with node:
                if then is None:
                    yield {}
                else:
                    async with then(app) as state:
                        yield dict(state or {})
            return
        app.state.lazily_node = node
        monitor = app.state.lazily_monitor = Monitor(node)
        async with node:
            monitor.start()
            try:
                if then is None:
                    yield {}
                else:
                    async with then(app) as state:
                        yield dict(state or {})
            finally:
                await monitor.stop()


def _client_monitor(client: ClusterClient) -> RuntimeError:
    """The refusal of the monitor routes on an app whose lifespan links ``client``."""
    return RuntimeError(
        f"add_monitor_routes serves a member's metrics and status page, and this app's "
        f"lifespan links {client!r}, a client, which has neither: add them only to an app "
        "whose lifespan runs a Node (lifespan(node)), and scrape /metrics from the members "
        "(lazily-queue node serves it)")


def get_node(request: Request) -> Node:
    """Dependency: the node of the app's :func:`lifespan`."""
    node = getattr(request.app.state, "lazily_node", None)
    if node is None:
        raise RuntimeError(
            "no lazily-queue node on this app: create it with "
            "FastAPI(lifespan=lazily_queue.integrations.fastapi.lifespan(node))"
        )
    if not node.running:
        raise RuntimeError(f"{node!r} is not running; the app's lifespan has not started it")
    assert isinstance(node, Node)
    return node


def get_client(request: Request) -> ClusterClient:
    """Dependency: the client of the app's :func:`lifespan`."""
    client = getattr(request.app.state, "lazily_client", None)
    if not isinstance(client, ClusterClient):
        raise RuntimeError(
            "no lazily-queue client on this app: create it with FastAPI(lifespan="
            "lazily_queue.integrations.fastapi.lifespan(lazily_queue.connect(...)))"
        )
    return client


def _cells(request: Request) -> Node | ClusterClient:
    client = getattr(request.app.state, "lazily_client", None)
    return client if isinstance(client, ClusterClient) else get_node(request)


def queue(name: str, *, capacity: int | None = None) -> Callable[[Request], QueueCell[Any]]:
    """Dependency factory: the replicated queue ``name``."""

    def dependency(request: Request) -> QueueCell[Any]:
        return _cells(request).queue(name, capacity=capacity)

    return dependency


def topic(name: str) -> Callable[[Request], TopicCell[Any]]:
    """Dependency factory: the replicated topic ``name``."""

    def dependency(request: Request) -> TopicCell[Any]:
        return _cells(request).topic(name)

    return dependency


def work_queue(
    name: str, *, visibility_timeout: float = 30.0, max_deliveries: int = 3
) -> Callable[[Request], WorkQueueCell]:
    """Dependency factory: the replicated work queue ``name``."""

    def dependency(request: Request) -> WorkQueueCell:
        return _cells(request).work_queue(
            name, visibility_timeout=visibility_timeout, max_deliveries=max_deliveries
        )

    return dependency


def add_monitor_routes(
    app: FastAPI, *, metrics_path: str | None = "/metrics", status_prefix: str | None = None
) -> None:
    """``GET metrics_path`` (Prometheus), and the status page at ``{status_prefix}/``
    with its data at ``{status_prefix}/status.json``, ``/history.json``, ``/vitals.json``,
    ``/subscribers.json`` and ``/objects.json`` when ``status_prefix`` is given (the admin
    API is served by the aiohttp integration and ``lazily-queue node`` only). They are a
    member's: on an app whose :func:`lifespan` links a client this raises
    ``RuntimeError`` (at once, or when the app starts if the lifespan is set after)."""

    running = app.router.lifespan_context
    if isinstance(running, _Lifespan) and isinstance(running.source, ClusterClient):
        raise _client_monitor(running.source)
    app.state.lazily_monitor_routes = True  # a client's lifespan set later refuses to start

    def monitor(request: Request) -> Monitor:
        client = getattr(request.app.state, "lazily_client", None)
        if isinstance(client, ClusterClient):
            raise _client_monitor(client)
        get_node(request)
        found: Monitor = request.app.state.lazily_monitor
        return found

    if metrics_path is not None:

        @app.get(metrics_path, include_in_schema=False)
        async def metrics(request: Request) -> Response:
            m = monitor(request)
            return Response(await m.metrics_document(), media_type=m.metrics_content_type)

    if status_prefix is not None:
        prefix = status_prefix.rstrip("/")

        @app.get(prefix + "/status.json", include_in_schema=False)
        async def status(request: Request) -> Response:
            return Response(await monitor(request).status_document(),
                            media_type="application/json")

        @app.get(prefix + "/history.json", include_in_schema=False)
        async def history(request: Request) -> Response:
            try:
                since = since_param(request.query_params.get("since"))
            except BadRequest as exc:
                return JSONResponse({"error": {"code": "bad_request", "message": str(exc)}},
                                    status_code=400)
            return Response(await monitor(request).history_document(since),
                            media_type="application/json")

        @app.get(prefix + "/subscribers.json", include_in_schema=False)
        async def subscribers(request: Request) -> Response:
            try:
                topic, start, offset = listing_params(request.query_params)
                return Response(await monitor(request).subscribers_document(topic, start, offset),
                                media_type="application/json")
            except BadListing as exc:
                return JSONResponse({"error": {"code": "bad_request", "message": str(exc)}},
                                    status_code=400)
            except UnknownTopic as exc:
                return JSONResponse({"error": {"code": "not_found", "message": str(exc)}},
                                    status_code=404)

        @app.get(prefix + "/objects.json", include_in_schema=False)
        async def objects(request: Request) -> Response:
            try:
                kind, start, offset = page_params(request.query_params)
            except BadListing as exc:
                return JSONResponse({"error": {"code": "bad_request", "message": str(exc)}},
                                    status_code=400)
            return Response(await monitor(request).objects_document(kind, start, offset),
                            media_type="application/json")

        @app.get(prefix + "/vitals.json", include_in_schema=False)
        async def vitals(request: Request) -> Response:
            try:
                body, headers = monitor(request).vitals_answer(
                    request.headers.get(NONCE_HEADER))
            except BadRequest as exc:
                return JSONResponse({"error": {"code": "bad_request", "message": str(exc)}},
                                    status_code=400)
            return Response(body, headers=headers)

        @app.get(prefix + "/", include_in_schema=False)
        async def page(request: Request) -> Response:
            try:
                page_interval(request.query_params.get("interval"))
            except BadRequest as exc:
                return Response(f"400 bad request: {exc}\n", status_code=400,
                                media_type="text/plain")
            return HTMLResponse(Monitor.page(), headers={
                k: v for k, v in PAGE_HEADERS.items() if k != "Content-Type"})

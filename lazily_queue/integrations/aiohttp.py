"""aiohttp integration: the node starts and stops with the application.

::

    from aiohttp import web
    from lazily_queue.integrations.aiohttp import NODE, setup

    app = web.Application()
    setup(app, Node(1, data_dir="data/1", peers=..., secret=...))

    async def submit(request: web.Request) -> web.Response:
        jobs = request.app[NODE].work_queue("jobs")
        return web.json_response({"id": await jobs.push(await request.json())})

:func:`setup` stores the node under the :data:`NODE` app key, appends an
``on_startup`` hook that starts it and an ``on_cleanup`` hook that stops it, and adds
``GET /metrics`` (Prometheus). ``status_prefix`` also serves the status page at
``{prefix}/`` and its data at ``{prefix}/status.json``, ``/history.json``,
``/vitals.json``, ``/subscribers.json`` and ``/objects.json`` (see
:mod:`lazily_queue.monitor`);
``admin_token`` adds the admin API under ``{prefix}/admin/`` (see
:mod:`lazily_queue.integrations.aiohttp_admin`).

:func:`host_guard` is the middleware ``lazily-queue node`` answers with: a request
whose ``Host`` is not one of the node's names gets 421 (DNS rebinding).

An application that is not a cluster member links a client instead:
``setup_client(app, lazily_queue.connect(addresses, credentials))`` stores it under
:data:`CLIENT` and links it with the application's startup, closing it at cleanup.
"""

from __future__ import annotations

try:
    from aiohttp import web
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "lazily_queue.integrations.aiohttp needs aiohttp: pip install -e '.[aiohttp]' in "
        "the lazily-queue clone"
    ) from exc

from collections.abc import Awaitable, Callable, Iterable

from ..client.cluster import ClusterClient
from ..http_gate import own_host
from ..monitor import PAGE_HEADERS, BadRequest, Monitor, page_interval, since_param
from ..node import Node
from ..object_listing import page_params
from ..subscriber_listing import BadListing, UnknownTopic, listing_params
from ..vitals_proof import NONCE_HEADER

NODE = web.AppKey("lazily_queue.node", Node)
MONITOR = web.AppKey("lazily_queue.monitor", Monitor)
CLIENT = web.AppKey("lazily_queue.client", ClusterClient)


def setup_client(app: web.Application, client: ClusterClient) -> None:
    """Link ``client`` with ``app``'s startup and close it at its cleanup."""
    app[CLIENT] = client

    async def start(app: web.Application) -> None:
        await app[CLIENT].start()

    async def stop(app: web.Application) -> None:
        await app[CLIENT].close()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)


def setup(
    app: web.Application,
    node: Node,
    *,
    metrics_path: str | None = "/metrics",
    status_prefix: str | None = None,
    admin_token: str | None = None,
) -> None:
    """Run ``node`` with ``app`` and add its monitoring routes (see the module docstring)."""
    app[NODE] = node
    app[MONITOR] = Monitor(node)
    app.on_startup.append(_start)
    app.on_cleanup.append(_stop)
    add_monitor_routes(app, metrics_path=metrics_path, status_prefix=status_prefix)
    if admin_token is not None:
        from .aiohttp_admin import add_admin_routes

        add_admin_routes(app, admin_token, prefix=status_prefix or "")


def add_monitor_routes(
    app: web.Application,
    *,
    metrics_path: str | None = "/metrics",
    status_prefix: str | None = None,
) -> None:
    """``GET metrics_path``, and ``{status_prefix}/`` + ``/status.json`` when given.

    They serve the member :func:`setup` runs with ``app``: on an app that links a client
    (:func:`setup_client`) this raises ``RuntimeError``, at once or, when the client is
    linked after, when the app starts."""
    if CLIENT in app:
        raise _client_monitor(app[CLIENT])
    if metrics_path is None and status_prefix is None:
        return
    if _check_monitor not in app.on_startup:
        app.on_startup.append(_check_monitor)
    if metrics_path is not None:
        app.router.add_get(metrics_path, metrics_view)
    if status_prefix is not None:
        prefix = status_prefix.rstrip("/")
        app.router.add_get(prefix + "/", page_view)
        app.router.add_get(prefix + "/status.json", status_view)
        app.router.add_get(prefix + "/history.json", history_view)
        app.router.add_get(prefix + "/vitals.json", vitals_view)
        app.router.add_get(prefix + "/subscribers.json", subscribers_view)
        app.router.add_get(prefix + "/objects.json", objects_view)


def _client_monitor(client: ClusterClient) -> RuntimeError:
    """The refusal of the monitor routes on an app that links ``client``."""
    return RuntimeError(
        f"add_monitor_routes serves a member's metrics and status page, and this app links "
        f"{client!r}, a client, which has neither: add them only to an app set up with "
        "setup(app, node), and scrape /metrics from the members (lazily-queue node serves "
        "it)")


async def _check_monitor(app: web.Application) -> None:
    """At startup: the monitor routes have a member to serve."""
    if MONITOR in app:
        return
    if CLIENT in app:
        raise _client_monitor(app[CLIENT])
    raise RuntimeError(
        "add_monitor_routes: no lazily-queue node on this app; set it up with "
        "lazily_queue.integrations.aiohttp.setup(app, node), which adds these routes")


def host_guard(names: Iterable[str], *, open_paths: Iterable[str] = ()
               ) -> Callable[..., Awaitable[web.StreamResponse]]:
    """A middleware answering 421 to a request whose ``Host`` is not one of the node's
    (see :func:`~lazily_queue.http_gate.own_host`; ``names`` are its own host names),
    except on ``open_paths`` (none by default: ``/metrics`` is guarded too, and a
    scraper names the node by its address or one of its names); the refusal names the
    address the request reached."""
    own = frozenset(names)
    unguarded = frozenset(open_paths)

    @web.middleware
    async def guard(request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
        host = request.headers.get("Host")
        if request.path in unguarded or own_host(host, own):
            return await handler(request)
        message = (f"this node does not answer for host {host!r}: a page of another site "
                   "reaching it by DNS rebinding is refused; open it by its own address"
                   + _reached(request)
                   + ", or set `http_advertise` to the URL a proxy serves it at")
        if request.path.endswith(".json") or "/admin/" in request.path:
            return web.json_response({"error": {"code": "misdirected", "message": message}},
                                     status=421)
        return web.Response(status=421, text=f"421 misdirected request: {message}\n")

    return guard


def _reached(request: web.Request) -> str:
    """`` (http://ADDRESS:PORT/)``: the local address the request came in on."""
    sock = None if request.transport is None else request.transport.get_extra_info("sockname")
    if not isinstance(sock, tuple) or len(sock) < 2:
        return ""
    host = f"[{sock[0]}]" if ":" in str(sock[0]) else str(sock[0])
    return f" ({request.scheme}://{host}:{sock[1]}/)"


def node_of(request: web.Request) -> Node:
    """The node of the request's application."""
    return request.app[NODE]


async def _start(app: web.Application) -> None:
    await app[NODE].start()
    app[MONITOR].start()


async def _stop(app: web.Application) -> None:
    await app[MONITOR].stop()
    await app[NODE].stop()


async def metrics_view(request: web.Request) -> web.Response:
    monitor = request.app[MONITOR]
    return web.Response(
        body=await monitor.metrics_document(),
        headers={"Content-Type": monitor.metrics_content_type})


async def status_view(request: web.Request) -> web.Response:
    return web.Response(body=await request.app[MONITOR].status_document(),
                        content_type="application/json")


def bad_request(message: str) -> web.Response:
    return web.json_response({"error": {"code": "bad_request", "message": message}},
                             status=400)


async def history_view(request: web.Request) -> web.Response:
    try:
        since = since_param(request.query.get("since"))
    except BadRequest as exc:
        return bad_request(str(exc))
    return web.Response(body=await request.app[MONITOR].history_document(since),
                        content_type="application/json")


async def subscribers_view(request: web.Request) -> web.Response:
    try:
        topic, prefix, offset = listing_params(request.query)
        return web.Response(
            body=await request.app[MONITOR].subscribers_document(topic, prefix, offset),
            content_type="application/json")
    except BadListing as exc:
        return bad_request(str(exc))
    except UnknownTopic as exc:
        return web.json_response({"error": {"code": "not_found", "message": str(exc)}},
                                 status=404)


async def objects_view(request: web.Request) -> web.Response:
    try:
        kind, prefix, offset = page_params(request.query)
    except BadListing as exc:
        return bad_request(str(exc))
    return web.Response(body=await request.app[MONITOR].objects_document(kind, prefix, offset),
                        content_type="application/json")


async def vitals_view(request: web.Request) -> web.Response:
    try:
        body, headers = request.app[MONITOR].vitals_answer(request.headers.get(NONCE_HEADER))
    except BadRequest as exc:
        return bad_request(str(exc))
    return web.Response(body=body, headers=headers)


async def page_view(request: web.Request) -> web.Response:
    try:
        page_interval(request.query.get("interval"))
    except BadRequest as exc:
        return web.Response(status=400, text=f"400 bad request: {exc}\n")
    return web.Response(body=Monitor.page(), headers=PAGE_HEADERS)

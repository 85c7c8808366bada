"""Monitor: what a node shows over HTTP (status, history, vitals, metrics and the page).

The web integrations and ``lazily-queue node`` share one monitor per node: start it
after the node has started and stop it before the node stops. It serves:

* :meth:`Monitor.status` (``/status.json``): the node's view of the cluster, with a
  health summary and every member's vitals;
* :meth:`Monitor.history` (``/history.json?since=T``): the recent series of every
  queue, work queue and topic and of the cluster (:mod:`.history`);
* :meth:`Monitor.vitals` (``/vitals.json``): this node's version, uptime, fsync
  latency, free disk and process figures, which the other members read, proven as a
  member's when asked with a nonce (:meth:`Monitor.vitals_answer`, :mod:`.vitals_proof`);
* :meth:`Monitor.subscribers` (``/subscribers.json?name=TOPIC&prefix=P&offset=N``): one
  page of a topic's subscribers by id, every one reachable (:mod:`.subscriber_listing`);
* :meth:`Monitor.objects` (``/objects.json?kind=KIND&prefix=P&offset=N``): one page of
  the queues, topics or work queues by name, every one reachable (a status lists only
  the largest of each kind: :mod:`.object_listing`);
* :meth:`Monitor.metrics` (``/metrics``, Prometheus text);
* :meth:`Monitor.status_document`, :meth:`Monitor.history_document`,
  :meth:`Monitor.subscribers_document`, :meth:`Monitor.objects_document` and
  :meth:`Monitor.metrics_document`: those documents as served over HTTP, built so that
  requests cannot hold the event loop (:mod:`.monitor_documents`);
* :meth:`Monitor.page` (``/``): the status page, plain HTML and JavaScript with SVG
  charts (no build step, no CDN: it works offline). ``/?interval=MS`` sets its refresh
  period: a finite number of milliseconds, clamped to
  [:data:`MIN_INTERVAL_MS`, :data:`MAX_INTERVAL_MS`]; anything else (``NaN``,
  ``1e400``, a negative number, text) is answered with 400 and says so.

It also logs one line per state change of the node (:mod:`.state_log`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .history import History
from .metrics import NodeMetrics
from .metrics_names import DEFAULT_NAMED_OBJECTS
from .monitor_documents import PacedBuilds, ThrottledDocument, encode_json
from .peer_pages import PeerPages
from .state_log import StateLog
from .status import LeadershipClock, node_status, node_status_sliced, objects_page
from .subscriber_listing import subscriber_page
from .vitals import Vitals
from .vitals_proof import BadNonce, vitals_answer

if TYPE_CHECKING:
    from .node import Node

PAGE_CONTENT_TYPE = "text/html; charset=utf-8"
#: Security headers of the status page: no framing, no other origin, no CDN.
PAGE_HEADERS = {
    "Content-Type": PAGE_CONTENT_TYPE,
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
        "form-action 'self'; base-uri 'none'"),
}
MIN_INTERVAL_MS = 250
MAX_INTERVAL_MS = 60_000
DEFAULT_INTERVAL_MS = 1000


class BadRequest(ValueError):
    """A query parameter is malformed; the message says which and what is accepted."""


def page_interval(raw: str | None) -> int:
    """The page's refresh period in ms from ``?interval=`` (see the module docstring)."""
    if raw is None or raw == "":
        return DEFAULT_INTERVAL_MS
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise BadRequest(
            f"interval must be a finite number of milliseconds > 0 (it is clamped to "
            f"{MIN_INTERVAL_MS}..{MAX_INTERVAL_MS}), not {raw[:40]!r}")
    return int(min(MAX_INTERVAL_MS, max(MIN_INTERVAL_MS, value)))


def since_param(raw: str | None) -> float:
    """``?since=`` of ``/history.json``: a finite time stamp (seconds), default 0."""
    if raw is None or raw == "":
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise BadRequest(f"since must be a finite time stamp in seconds, not {raw[:40]!r}")
    return value


class Monitor:
    """Status, history, vitals, metrics and the status page of one node."""

    def __init__(self, node: Node, *, history_interval: float = 1.0,
                 history_window: float = 300.0, peer_interval: float = 2.0,
                 named_objects: int = DEFAULT_NAMED_OBJECTS) -> None:
        """``named_objects``: the objects of each kind ``/metrics`` shows by name
        (:mod:`.metrics_names`)."""
        self.node = node
        self.node_metrics = NodeMetrics(node, named_objects=named_objects)
        self.clock = LeadershipClock(node)
        self.vitals_source = Vitals(node)
        self.node_metrics.fsync_listeners.append(self.vitals_source.fsync.observe)
        self.history_source = History(node, interval=history_interval, window=history_window)
        self.peer_pages = PeerPages(node, interval=peer_interval)
        self.state_log = StateLog(node)
        self._metrics_document = ThrottledDocument(self.node_metrics.render_async)
        self._status_document = ThrottledDocument(self._build_status)
        self._history_builds = PacedBuilds()
        self._listings = PacedBuilds()

    @property
    def http_figures(self) -> Callable[[], dict[str, int]] | None:
        """The figures of the HTTP server serving these documents, shown as the status's
        ``http`` and in the metrics (set by whoever serves them; ``None``: not shown)."""
        return self.node_metrics.http_figures

    @http_figures.setter
    def http_figures(self, figures: Callable[[], dict[str, int]] | None) -> None:
        self.node_metrics.http_figures = figures

    @property
    def metrics_content_type(self) -> str:
        return self.node_metrics.content_type

    def start(self) -> None:
        """Begin timing fsyncs and leadership and sampling (the node must be running)."""
        self.node_metrics.attach()
        self.clock.start()
        self.history_source.start()
        self.peer_pages.start()
        self.state_log.start()

    async def stop(self) -> None:
        await self.state_log.stop()
        await self.peer_pages.stop()
        await self.history_source.stop()
        await self.clock.stop()

    def status(self) -> dict[str, Any]:
        return self._with_http(node_status(
            self.node, self.clock, vitals=self.vitals(), peers=self.peer_pages.answers,
            term_changes=list(self.history_source.term_changes)))

    def _with_http(self, status: dict[str, Any]) -> dict[str, Any]:
        if self.http_figures is not None:
            status["http"] = self.http_figures()
        return status

    def history(self, since: float = 0.0) -> dict[str, Any]:
        return self.history_source.document(since)

    async def history_document(self, since: float = 0.0) -> bytes:
        """:meth:`history` as JSON, as served over HTTP (see :mod:`.monitor_documents`)."""
        async def build() -> bytes:
            return await encode_json(await self.history_source.document_sliced(since))

        return await self._history_builds.run(build)

    def vitals(self) -> dict[str, Any]:
        return self.vitals_source.document()

    def vitals_answer(self, nonce_header: str | None) -> tuple[bytes, dict[str, str]]:
        """``/vitals.json``'s body and headers, with a proof when ``nonce_header`` (the
        request's :data:`~lazily_queue.vitals_proof.NONCE_HEADER`) is given; raises
        :class:`BadRequest` when it is malformed."""
        body = json.dumps(self.vitals()).encode()
        try:
            return body, vitals_answer(body, nonce_header, self.node.vitals_key)
        except BadNonce as exc:
            raise BadRequest(str(exc)) from None

    def subscribers(self, topic: str, prefix: str = "", offset: int = 0) -> dict[str, Any]:
        """One page of ``topic``'s subscribers (raises
        :class:`~lazily_queue.subscriber_listing.UnknownTopic`)."""
        return subscriber_page(self.node.view, topic, prefix, offset)

    def objects(self, kind: str, prefix: str = "", offset: int = 0) -> dict[str, Any]:
        """One page of the objects of ``kind`` (``queues``, ``topics``, ``work_queues``)."""
        return objects_page(self.node.view, kind, prefix, offset)

    async def subscribers_document(self, topic: str, prefix: str = "",
                                   offset: int = 0) -> bytes:
        """:meth:`subscribers` as JSON, one listing a turn of the loop (see
        :mod:`.monitor_documents`)."""
        async def build() -> bytes:
            return json.dumps(self.subscribers(topic, prefix, offset)).encode()

        return await self._listings.run(build)

    async def objects_document(self, kind: str, prefix: str = "", offset: int = 0) -> bytes:
        """:meth:`objects` as JSON, one listing a turn of the loop."""
        async def build() -> bytes:
            return json.dumps(self.objects(kind, prefix, offset)).encode()

        return await self._listings.run(build)

    def metrics(self) -> bytes:
        return self.node_metrics.render()

    async def metrics_document(self) -> bytes:
        """:meth:`metrics` as served over HTTP (see :mod:`.monitor_documents`)."""
        return await self._metrics_document.get()

    async def _build_status(self) -> bytes:
        status = await node_status_sliced(
            self.node, self.clock, vitals=self.vitals(), peers=self.peer_pages.answers,
            term_changes=list(self.history_source.term_changes))
        return await encode_json(self._with_http(status))

    async def status_document(self) -> bytes:
        """:meth:`status` as JSON, as served over HTTP (see :mod:`.monitor_documents`)."""
        return await self._status_document.get()

    @staticmethod
    def page() -> bytes:
        return status_page()


@cache
def status_page() -> bytes:
    """The status page (package data ``lazily_queue/web/status.html``)."""
    return resources.files("lazily_queue").joinpath("web/status.html").read_bytes()

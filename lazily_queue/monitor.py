"""Monitor: what a node shows over HTTP (status data, metrics and the status page).

The web integrations and ``lazily-queue node`` share one monitor per node: start it
after the node has started and stop it before the node stops. It serves three
documents: :meth:`Monitor.status` (``/status.json``), :meth:`Monitor.metrics`
(``/metrics``, Prometheus text) and :meth:`Monitor.page` (a read-only HTML page
that polls ``status.json`` next to it).
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .metrics import NodeMetrics
from .status import LeadershipClock, node_status

if TYPE_CHECKING:
    from .node import Node

PAGE_CONTENT_TYPE = "text/html; charset=utf-8"


class Monitor:
    """Status, metrics and the status page of one node."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.node_metrics = NodeMetrics(node)
        self.clock = LeadershipClock(node)

    @property
    def metrics_content_type(self) -> str:
        return self.node_metrics.content_type

    def start(self) -> None:
        """Begin timing fsyncs and leadership (the node must be running)."""
        self.node_metrics.attach()
        self.clock.start()

    async def stop(self) -> None:
        await self.clock.stop()

    def status(self) -> dict[str, Any]:
        return node_status(self.node, self.clock)

    def metrics(self) -> bytes:
        return self.node_metrics.render()

    @staticmethod
    def page() -> bytes:
        return status_page()


@cache
def status_page() -> bytes:
    """The status page (package data ``lazily_queue/web/status.html``)."""
    return resources.files("lazily_queue").joinpath("web/status.html").read_bytes()

"""How the monitor's large documents (``/metrics``, ``/status.json``, ``/history.json``)
are served without holding the event loop: a node's heartbeats run on the same loop,
and at tens of thousands of objects building the first two takes longer than an
election timeout (a full history, 200 objects over 5 minutes, 0.2 s).

* :class:`ThrottledDocument` builds a document for every request unless one is being
  built (its requests share it) or the last build was slow (:data:`SLOW`) and ended so
  recently that building again would spend more than :data:`LOOP_SHARE` of the loop's
  time on this document (they get the last one): only a state whose document takes
  long to build is answered with a document as old as a few of its builds.
* :class:`PacedBuilds` builds a document that differs by request (``/history.json``
  by its ``since``, a page of ``/objects.json`` or ``/subscribers.json``) one request
  a turn of the loop, each build starting only once the builds so far took at most
  :data:`LOOP_SHARE` of the loop's time since the first slow one (requests arriving
  together would otherwise be built in one turn, the loop's timers waiting for all).
* :func:`render_metrics` collects the metric families on the loop, letting it run
  between families, and formats them on a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

#: The most of the loop's time one document's builds take under back-to-back requests.
LOOP_SHARE = 0.2
#: A build quicker than this many seconds is never reused.
SLOW = 0.05


class ThrottledDocument:
    """A document from ``build`` (see the module docstring)."""

    def __init__(self, build: Callable[[], Awaitable[bytes]]) -> None:
        self._build = build
        self._last: bytes | None = None
        self._fresh_until = 0.0
        self._building: asyncio.Future[bytes] | None = None
        #: Builds so far.
        self.builds = 0

    async def get(self) -> bytes:
        """The document: a new one, the one being built, or a recent one."""
        if self._building is None:
            if self._last is not None and time.monotonic() < self._fresh_until:
                return self._last
            self._building = asyncio.ensure_future(self._run())
        return await asyncio.shield(self._building)

    async def _run(self) -> bytes:
        started = time.monotonic()
        try:
            document = await self._build()
        finally:
            self._building = None
        self.builds += 1
        ended = time.monotonic()
        took = ended - started
        self._last = document
        self._fresh_until = ended + (took * (1 / LOOP_SHARE - 1) if took >= SLOW else 0.0)
        return document


class PacedBuilds:
    """Builds of per-request documents (see the module docstring)."""

    def __init__(self) -> None:
        self._turn = asyncio.Lock()
        self._next_start = 0.0
        #: Builds so far.
        self.builds = 0

    async def run(self, build: Callable[[], Awaitable[bytes]]) -> bytes:
        """``build()``'s document, built in turn with the others."""
        async with self._turn:
            wait = self._next_start - time.monotonic()
            await asyncio.sleep(max(0.0, wait))  # a turn of its own, whoever waits
            started = time.monotonic()
            try:
                return await build()
            finally:
                self.builds += 1
                ended = time.monotonic()
                took = ended - started
                self._next_start = ended + (took * (1 / LOOP_SHARE - 1) if took >= SLOW
                                            else 0.0)


class _Families(Collector):
    """Metric families collected already, for :func:`generate_latest`."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


async def render_metrics(registry: Collector) -> bytes:
    """``registry`` in the Prometheus text format: collected here, a family at a time
    with the loop running between them, and formatted on a worker thread."""
    families: list[Metric] = []
    for family in registry.collect():
        families.append(family)
        await asyncio.sleep(0)
    return await asyncio.to_thread(generate_latest, _Families(families))  # type: ignore[arg-type]


async def encode_json(document: Any) -> bytes:
    """``document`` as JSON (as ``web.json_response`` writes it), encoded on a worker
    thread: ``document`` must be plain data no one changes meanwhile."""
    text = await asyncio.to_thread(json.dumps, document)
    return text.encode()

"""Leader maintenance: lease expiry, due delayed items, message expiry sweeps, topic
retention GC, dedup bounds, the ephemeral subscriptions of clients gone silent and the
start of checked give-backs' checking, as proposals.

Both are ordinary operations, so they apply identically on every member. Only the
leader proposes them; a member that stops leading mid-round just sees its proposals
fail or commit through the new leader.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from .background import Background
from .core.dedup import DedupLimits
from .replicated import ephemeral_owners, ops
from .replicated.dedup import limits_args
from .replicated.expiry import EXPIRE_LIMIT
from .replicated.view import ReadView

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)


def due_operations(view: ReadView, now_ms: int, *, gc_topics: bool,
                   dedup: DedupLimits | None = None,
                   reap_grace_ms: int | None = None) -> list[tuple[int, list[Any]]]:
    """The maintenance ops the state calls for at ``now_ms`` (the proposer's wall clock,
    ms): the proposer's ``dedup`` bounds where the cluster applies others, a reap of
    each work queue with an expired lease, a promotion of each work queue and queue
    holding a delayed element now due, a sweep (``EXPIRE``, of at most
    :data:`~.replicated.expiry.EXPIRE_LIMIT` elements) of each cell holding an
    expired element at its head, with ``gc_topics`` a GC of each topic holding
    elements every subscriber has read and, with ``reap_grace_ms``, a reap of the
    ephemeral subscriptions of client sessions not refreshed for that long
    (:mod:`.replicated.ephemeral_owners`), and ``POPPED_CHECKING`` while the sessions'
    records of popped elements are not checking (:mod:`.replicated.session_popped`: a
    new leader proposes it first in its term, this proposes it again if that was lost)."""
    due: list[tuple[int, list[Any]]] = []
    if not view.popped_checking:
        due.append((ops.POPPED_CHECKING, []))
    if dedup is not None and view.dedup_limits != dedup:
        due.append((ops.DEDUP_LIMITS, limits_args(dedup)))
    for name, state in view.work_queues.items():
        deadlines = [d.deadline for d in state.core.in_flight()]
        if deadlines and min(deadlines) < max(now_ms, view.now):
            due.append((ops.WORK_REAP, [name, None]))
        next_due = state.core.next_due()
        if next_due is not None and next_due <= max(now_ms, view.now):
            due.append((ops.WORK_PROMOTE, [name]))
    for name in view.queues_due(max(now_ms, view.now)):
        due.append((ops.QUEUE_PROMOTE, [name]))
    for name, kind in view.expiry_due(max(now_ms, view.now)):
        due.append((ops.EXPIRE, [name, kind, EXPIRE_LIMIT]))
    if reap_grace_ms is not None and view.ephemeral_owners_stale(max(now_ms, view.now),
                                                                  reap_grace_ms):
        due.append((ops.EPHEMERAL_REAP, [reap_grace_ms]))
    if gc_topics:
        for name, topic in view.topics.items():
            if topic.retention_frontier() > topic.base_offset():
                due.append((ops.TOPIC_GC, [name]))
    return due


class Maintenance(Background):
    """Proposes :func:`due_operations` every ``node.maintenance_interval`` seconds while
    ``node`` leads (topic GC every ``node.topic_gc_interval`` seconds; reaps of
    ephemeral subscriptions once it has led for their grace,
    :data:`~.replicated.ephemeral_owners.GRACE_MS`, so that the members serving clients
    refreshed them after a restart of the cluster)."""

    def __init__(self, node: Node) -> None:
        self.node = node
        #: Monotonic time this node was first seen leading in a row (``None``: not).
        self.led_since: float | None = None
        #: The kind of failure the rounds meet in a row, logged once (``None``: none).
        self._failing: type[BaseException] | None = None

    def start(self) -> None:
        interval = self.node.maintenance_interval
        if interval is not None:
            self._start_task(lambda: self._run(interval),
                             f"lazily-maintenance-{self.node.node_id}")


    async def _run(self, interval: float) -> None:
        node = self.node
        last_gc = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            if not node.is_leader:
                self.led_since = self._failing = None
                continue
            if self.led_since is None:
                self.led_since = time.monotonic()
            try:
                await self.once(time.monotonic() - last_gc >= node.topic_gc_interval)
            except Exception as exc:
                if type(exc) is not self._failing:  # a stalled disk fails every round
                    self._failing = type(exc)
                    log.info("node %s: maintenance round skipped: %s (rounds failing so "
                             "are not logged again until one succeeds)", node.node_id, exc)
            else:
                self._failing = None
            if time.monotonic() - last_gc >= node.topic_gc_interval:
                last_gc = time.monotonic()

    async def once(self, gc_topics: bool) -> None:
        """Propose every due operation and wait for them to commit; a sweep that removed
        its limit (more may be due) is proposed again at once, until one removes less."""
        node = self.node
        now_ms = int((node.wall_clock or time.time)() * 1000)
        grace = ephemeral_owners.GRACE_MS
        led = self.led_since is not None and time.monotonic() - self.led_since >= grace / 1000
        due = due_operations(node.view, now_ms, gc_topics=gc_topics, dedup=node.dedup,
                             reap_grace_ms=grace if led else None)
        while due:
            results = await asyncio.gather(*(node.driver.call(code, args,
                                                              timeout=node.op_timeout)
                                             for code, args in due))
            due = [(code, args) for (code, args), result in zip(due, results, strict=True)
                   if code == ops.EXPIRE and result == EXPIRE_LIMIT]

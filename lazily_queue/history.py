"""History: a node's recent figures, sampled into bounded series for the status page.

Every ``interval`` seconds :class:`History` samples, for each queue, work queue and
topic this node has applied: the totals of items in and out, the depth, the age of
the oldest item, the consumer lag and (work queues) the dead letters; and for the
cluster: members up, quorum, term, commit index and leader. Each series keeps the
last ``window`` seconds; at most ``max_objects`` objects are followed (by name); the
memory held is bounded by both.

How the figures are derived (from the replicated state, so every member agrees up to
its applied index):

* queue: *in* counts the pushes this node applied since it started watching, *out* is
  ``in - depth``; the consumer lag is the depth;
* work queue: *in* is the next item id (every push ever), *out* is ``in - (pending +
  in flight + dead letters)`` (acknowledged or purged); the lag is the pending count;
* topic: *in* is the end offset, *out* the sum of the subscribers' cursors; the lag is
  the largest subscriber lag.

The age of the oldest item is when the *in* total first passed that item's position
(the oldest element of a queue, the pending head of a work queue, the slowest
subscriber's next element of a topic), at sampling resolution; an item older than the
series is reported with the series' age and ``"age_floor": true``.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .background import Background
from .core.queue import PUSH
from .errors import shown
from .replicated.events import Event, QueueChanged

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

#: The columns of an object's points, in order.
COLUMNS = ("t", "in_rate", "out_rate", "depth", "oldest_age", "lag", "dead_letters")
#: The columns of the cluster's points, in order.
CLUSTER_COLUMNS = ("t", "members_up", "members_total", "quorum", "term", "commit_index")
#: Series built between two turns of the loop (:meth:`History.document_sliced`).
SLICE = 8


@dataclass
class _Sample:
    t: float
    total_in: int
    total_out: int
    depth: int
    age: float | None
    lag: int
    dead: int | None


@dataclass
class _Series:
    kind: str
    name: str
    capacity: int
    samples: deque[_Sample] = field(init=False)
    #: (time, in total) each time the in total moved: when each position arrived.
    arrivals: deque[tuple[float, int]] = field(init=False)
    age_floor: bool = False

    def __post_init__(self) -> None:
        self.samples = deque(maxlen=self.capacity)
        self.arrivals = deque(maxlen=self.capacity)

    def arrived(self, now: float, total_in: int) -> None:
        if not self.arrivals or self.arrivals[-1][1] != total_in:
            self.arrivals.append((now, total_in))

    def age_of(self, position: int, now: float) -> float | None:
        """Seconds since the element at ``position`` (0-based, in arrival order) arrived."""
        arrivals = self.arrivals
        while len(arrivals) > 1 and arrivals[1][1] <= position:
            arrivals.popleft()  # marks before the oldest item's arrival are done with
        if not arrivals or arrivals[-1][1] <= position:
            return None  # nothing waiting
        first_time, first_total = arrivals[0]
        if first_total > position:
            self.age_floor = True  # it arrived before the series began
            return max(0.0, now - first_time)
        self.age_floor = False
        return max(0.0, now - arrivals[1][0])


class History(Background):
    """Samples ``node`` every ``interval`` seconds (see the module docstring)."""

    def __init__(self, node: Node, *, interval: float = 1.0, window: float = 300.0,
                 max_objects: int = 200) -> None:
        if not (math.isfinite(interval) and interval > 0):
            raise ValueError("interval must be a positive number of seconds, "
                             f"not {shown(interval)}")
        if not (math.isfinite(window) and window >= interval):
            raise ValueError(f"window must be at least the interval, not {shown(window)}")
        self.node = node
        self.interval = interval
        self.window = window
        self.max_objects = max_objects
        self.capacity = int(window / interval) + 1
        self.series: dict[tuple[str, str], _Series] = {}
        self.cluster: deque[list[Any]] = deque(maxlen=self.capacity)
        self.term_changes: deque[dict[str, Any]] = deque(maxlen=64)
        self.untracked = 0
        self._pushes: dict[str, int] = {}
        self._last_term: tuple[int, str | None] | None = None
        node.add_event_observer(self._on_events)

    def start(self) -> None:
        self._start_task(self._run, "lazily-history")


    async def _run(self) -> None:
        while True:
            if self.node.running:
                try:
                    self.sample()
                except Exception:
                    log.exception("node %s: sampling the history failed", self.node.node_id)
            await asyncio.sleep(self.interval)

    def _on_events(self, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, QueueChanged) and event.op == PUSH:
                self._pushes[event.name] = self._pushes.get(event.name, 0) + 1

    # -- sampling -------------------------------------------------------------------------

    def sample(self, now: float | None = None) -> None:
        """Record one sample of every followed object and of the cluster: the first
        ``max_objects`` by name (then kind); only those are read, so a cluster of many
        objects costs a sample a pass over their names, not a figure of each."""
        now = time.time() if now is None else now
        view = self.node.view
        kinds = (("queue", view.queues), ("work_queue", view.work_queues),
                 ("topic", view.topics))
        total = sum(len(objects) for _, objects in kinds)
        followed = heapq.nsmallest(self.max_objects, (
            (name, kind) for kind, objects in kinds for name in objects))
        self.untracked = max(0, total - self.max_objects)
        seen: set[tuple[str, str]] = set()
        for name, kind in followed:
            total_in, total_out, depth, oldest, dead = self._figures(kind, name)
            key = (kind, name)
            seen.add(key)
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = _Series(kind, name, self.capacity)
            series.arrived(now, total_in)
            lag = depth if kind != "topic" else total_in - oldest
            series.samples.append(_Sample(now, total_in, total_out, depth,
                                          series.age_of(oldest, now), lag, dead))
        for key in [k for k in self.series if k not in seen]:
            del self.series[key]  # deleted, or no longer among the followed
        for name in [n for n in self._pushes if n not in view.queues]:
            del self._pushes[name]
        self._sample_cluster(now)

    def _figures(self, kind: str, name: str) -> tuple[int, int, int, int, int | None]:
        """``(in, out, depth, oldest position, dead letters)`` of object ``name``."""
        view = self.node.view
        if kind == "queue":
            depth = view.queues[name].len()
            total_in = self._pushes.get(name, 0)
            if total_in < depth:  # elements from before we watched: they arrive now
                total_in = self._pushes[name] = depth
            return total_in, total_in - depth, depth, total_in - depth, None
        if kind == "work_queue":
            core = view.work_queues[name].core
            total_in = core.next_ids()[0]
            held = core.pending_len() + core.in_flight_len() + core.dead_letter_len()
            head = core.head()
            return (total_in, total_in - held, core.pending_len(),
                    total_in if head is None else head.item_id, core.dead_letter_len())
        t = view.topics[name]
        cursors = [int(s["cursor"]) for s in t.subscriptions().values()]
        end = t.end_offset()
        return (end, sum(cursors), end - t.base_offset(),
                min(cursors, default=t.base_offset()), None)

    def _sample_cluster(self, now: float) -> None:
        status = self.node.driver.replica.status()
        members = list(status["members"])
        connected = set(status["connected"]) | {status["node"]}
        up = sum(1 for m in members if m in connected)
        self.cluster.append([now, up, len(members), int(bool(status["has_quorum"])),
                             status["term"], status["commit_index"]])
        term, leader = status["term"], status["leader"]
        last = self._last_term
        if last is not None and term != last[0] and last[0] > 0:
            self.term_changes.append({"time": now, "term": term, "leader": leader})
        elif self.term_changes and self.term_changes[-1]["term"] == term and leader:
            self.term_changes[-1]["leader"] = leader  # learned after the election
        self._last_term = (term, leader)

    # -- reading --------------------------------------------------------------------------

    def document(self, since: float = 0.0) -> dict[str, Any]:
        """The series as JSON-ready data: points with ``t > since`` (rates per second)."""
        return self._whole(dict(self._entries(since)), since)

    async def document_sliced(self, since: float = 0.0) -> dict[str, Any]:
        """:meth:`document`, letting the loop run every :data:`SLICE` series; the result
        shares nothing the sampling changes (it may be encoded on another thread)."""
        objects = {}
        for count, (key, entry) in enumerate(self._entries(since), 1):
            objects[key] = entry
            if count % SLICE == 0:
                await asyncio.sleep(0)
        return self._whole(objects, since)

    def _entries(self, since: float) -> Iterator[tuple[str, dict[str, Any]]]:
        for (kind, name), series in sorted(self.series.items()):
            points = []
            previous: _Sample | None = None
            for sample in series.samples:
                if previous is not None and sample.t > since:
                    span = max(sample.t - previous.t, 1e-9)
                    points.append([
                        round(sample.t, 3),
                        round(max(0, sample.total_in - previous.total_in) / span, 3),
                        round(max(0, sample.total_out - previous.total_out) / span, 3),
                        sample.depth,
                        None if sample.age is None else round(sample.age, 3),
                        sample.lag,
                        sample.dead,
                    ])
                previous = sample
            last = series.samples[-1] if series.samples else None
            yield f"{kind}:{name}", {
                "kind": kind, "name": name, "points": points,
                "age_floor": series.age_floor,
                "total_in": None if last is None else last.total_in,
                "total_out": None if last is None else last.total_out,
            }

    def _whole(self, objects: dict[str, Any], since: float) -> dict[str, Any]:
        return {
            "interval": self.interval,
            "window": self.window,
            "now": time.time(),
            "columns": list(COLUMNS),
            "objects": objects,
            "untracked": self.untracked,
            "cluster": {
                "columns": list(CLUSTER_COLUMNS),
                "points": [list(p) for p in self.cluster if p[0] > since],
                "term_changes": [dict(c) for c in self.term_changes],
            },
        }

"""A simulated network: delayed, lossy, duplicating, reordering links with partitions.

Frames are encoded with the real wire codec and decoded on delivery, so the replicas
see exactly what a socket would hand them. A link is *up* for both ends while both
nodes run and at least one direction is not cut (like a connection); a one-way cut
loses the frames of that direction while the link stays up (an asymmetric partition).
Within one connection frames arrive in order unless the reorder fault picks them;
when a link goes down its frames in flight are lost, except the ones the stale fault
keeps, which then arrive after the link came back (reordering across reconnects).
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lazily_queue.raft.codec import encode_frames

Deliver = Callable[[str, str, bytes], None]
PeerChange = Callable[[str, str, bool], None]


@dataclass
class LinkFaults:
    """Per-frame fault probabilities and the latency range, in seconds."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    stale: float = 0.0
    latency: tuple[float, float] = (0.001, 0.004)


@dataclass(order=True)
class _Frame:
    at: float
    seq: int
    src: str
    dst: str
    epoch: int
    data: bytes
    stale_ok: bool


class SimNetwork:
    """Every link between the simulated nodes, and the frames in flight."""

    def __init__(self, nodes: list[str], rng: random.Random) -> None:
        self.nodes = list(nodes)
        self.rng = rng
        self.faults = LinkFaults()
        self.running: set[str] = set()
        self._cut: set[frozenset[str]] = set()
        self._one_way: set[tuple[str, str]] = set()
        self._epoch: dict[frozenset[str], int] = {}
        self._up: dict[frozenset[str], bool] = {}
        self._last: dict[tuple[str, str], float] = {}
        self._flight: list[_Frame] = []
        self._seq = 0
        self.sent = 0
        self.dropped = 0
        self.delivered = 0
        self.on_peer: PeerChange = lambda _node, _peer, _up: None
        self.on_change: Callable[[], None] = lambda: None

    # -- topology ------------------------------------------------------------------------

    def _passes(self, src: str, dst: str) -> bool:
        return (
            src in self.running
            and dst in self.running
            and frozenset((src, dst)) not in self._cut
            and (src, dst) not in self._one_way
        )

    def up(self, a: str, b: str) -> bool:
        return self._up.get(frozenset((a, b)), False)

    def two_way(self, a: str, b: str) -> bool:
        """Whether frames between running ``a`` and ``b`` pass in both directions."""
        return self.up(a, b) and self._passes(a, b) and self._passes(b, a)

    def partition(self, *groups: list[str]) -> None:
        """Cut every link between nodes of different groups."""
        for i, ga in enumerate(groups):
            for gb in groups[i + 1 :]:
                for a in ga:
                    for b in gb:
                        self._cut.add(frozenset((a, b)))
        self.refresh()

    def cut_one_way(self, src: str, dst: str) -> None:
        self._one_way.add((src, dst))
        self.refresh()

    def heal(self) -> None:
        self._cut.clear()
        self._one_way.clear()
        self.refresh()

    def set_running(self, node: str, running: bool) -> None:
        if running:
            self.running.add(node)
        else:
            self.running.discard(node)
        self.refresh()

    def refresh(self) -> None:
        """Recompute which links are up and report every change to both ends."""
        for i, a in enumerate(self.nodes):
            for b in self.nodes[i + 1 :]:
                key = frozenset((a, b))
                up = self._passes(a, b) or self._passes(b, a)
                if up == self._up.get(key, False):
                    continue
                self._up[key] = up
                if not up:
                    self._epoch[key] = self._epoch.get(key, 0) + 1
                for x, y in ((a, b), (b, a)):
                    if x in self.running:
                        self.on_peer(x, y, up)
        self.on_change()

    def peers_up(self, node: str) -> list[str]:
        return [p for p in self.nodes if p != node and self.up(node, p)]

    def describe(self) -> str:
        cut = sorted("-".join(sorted(k)) for k in self._cut)
        one = sorted(f"{s}>{d}" for s, d in self._one_way)
        return f"cut={cut} one_way={one} running={sorted(self.running)}"

    # -- frames --------------------------------------------------------------------------

    def send(self, src: str, dst: str, messages: list[dict[str, Any]], now: float) -> None:
        """Encode and queue ``messages`` from ``src`` to ``dst`` with the link's faults."""
        key = frozenset((src, dst))
        f = self.faults
        for frame in encode_frames(messages):
            self.sent += 1
            if not self.up(src, dst) or not self._passes(src, dst):
                self.dropped += 1
                continue
            if f.drop and self.rng.random() < f.drop:
                self.dropped += 1
                continue
            copies = 2 if f.duplicate and self.rng.random() < f.duplicate else 1
            for _ in range(copies):
                # Arrivals fall on a 1 ms grid, so a member handles what arrived in one
                # millisecond in one step (as a driver does within one loop iteration).
                at = math.ceil((now + self.rng.uniform(*f.latency)) * 1000.0) / 1000.0
                if not (f.reorder and self.rng.random() < f.reorder):
                    at = max(at, self._last.get((src, dst), 0.0))
                    self._last[(src, dst)] = at
                stale_ok = bool(f.stale) and self.rng.random() < f.stale
                self._seq += 1
                heapq.heappush(
                    self._flight,
                    _Frame(at, self._seq, src, dst, self._epoch.get(key, 0), frame, stale_ok),
                )

    def send_raw(self, src: str, dst: str, frame: bytes, now: float) -> None:
        """Queue one frame as it is (a peer sending bytes of its own making)."""
        if not self.up(src, dst) or not self._passes(src, dst):
            return
        key = frozenset((src, dst))
        self._seq += 1
        at = math.ceil((now + self.rng.uniform(*self.faults.latency)) * 1000.0) / 1000.0
        heapq.heappush(
            self._flight, _Frame(at, self._seq, src, dst, self._epoch.get(key, 0), frame, False)
        )

    def drop_link(self, a: str, b: str) -> None:
        """The receiver closed the connection (a bad frame): frames in flight are lost and
        the link reconnects at once, both ends seeing it go down and up."""
        key = frozenset((a, b))
        if not self._up.get(key, False):
            return
        self._epoch[key] = self._epoch.get(key, 0) + 1
        for up in (False, True):
            for x, y in ((a, b), (b, a)):
                if x in self.running:
                    self.on_peer(x, y, up)

    def next_time(self) -> float | None:
        return self._flight[0].at if self._flight else None

    def deliver_due(self, now: float, deliver: Deliver) -> None:
        """Hand every frame due by ``now`` to ``deliver(src, dst, frame)``."""
        while self._flight and self._flight[0].at <= now:
            fr = heapq.heappop(self._flight)
            key = frozenset((fr.src, fr.dst))
            current = self._epoch.get(key, 0) == fr.epoch
            if not self.up(fr.src, fr.dst) or not self._passes(fr.src, fr.dst):
                self.dropped += 1
                continue
            if not current and not fr.stale_ok:
                self.dropped += 1
                continue
            self.delivered += 1
            deliver(fr.src, fr.dst, fr.data)

    def in_flight(self) -> int:
        return len(self._flight)

"""Replay by time in the simulation: a replayer starting at (and seeking to) enqueue
times, and the model's reading of those ops as the offsets they name.

The leader stamps every batch with its clock, never below the last stamp applied, so
the stamps of a topic's offsets never decrease: a time names the first retained offset
stamped at or after it, the tail when there is none. The checker applies the time ops
as the offset ops they name (``TOPIC_SUBSCRIBE_AT`` / ``TOPIC_SEEK``), so a replayer's
reads must continue from exactly that offset.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from typing import Any

from lazily_queue.replicated import ops as C

from .client import TOPIC, Host
from .clock import EPOCH
from .workload import Replayer


def time_as_offset(code: int, args: list[Any], stamps: list[int],
                   base: int) -> tuple[int, list[Any]]:
    """A time op as the offset op it names in a log whose offset ``i`` has stamp
    ``stamps[i]`` (non-decreasing) and retains ``base..len(stamps)``."""
    if code == C.TOPIC_SUBSCRIBE_AT_TIME:
        name, sid, durability, stamp = args
        return C.TOPIC_SUBSCRIBE_AT, [name, sid, durability, _at(stamp, stamps, base)]
    name, sid, stamp = args
    return C.TOPIC_SEEK, [name, sid, _at(stamp, stamps, base)]


def _at(stamp: int, stamps: list[int], base: int) -> int:
    return max(base, bisect_left(stamps, stamp))


class TimeReplayer(Replayer):
    """A durable subscriber that starts at an enqueue time (a little before now, or
    after it: the tail) and now and then seeks to another one."""

    kind = "time-replayer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.kind = "time-replayer"

    def _time(self) -> int:
        now = round((EPOCH + self.cluster.now()) * 1000)  # about the leaders' stamps
        return now + self.rng.choice([-2000, -800, -300, -100, -40, -10, -3, -1, 0, 50])

    def next_op(self) -> None:
        if not self.connected:
            self.call(C.TOPIC_SUBSCRIBE_AT_TIME, [TOPIC, self.cid, "durable", self._time()],
                      self._subscribed_at, polling=True)
            return
        if not self.draining and self.rng.random() < 0.1:
            self.call(C.TOPIC_SEEK_TIME, [TOPIC, self.cid, self._time()], self._sought)
            return
        super(Replayer, self).next_op()

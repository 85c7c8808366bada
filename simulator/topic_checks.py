"""The topic half of the checker: the topic model's replay of the committed topic ops
and the order of each subscriber's reads (durable: no gap nor duplicate; ephemeral: in
order; a start or a seek restarts the sequence)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, NoReturn

from lazily_queue.replicated import ops as C

from .group_model import GroupModels
from .history import AppliedOp
from .replay_time import time_as_offset

#: In a subscriber's reads: its cursor was placed (a start or a seek).
SEEK = -1


@dataclass
class TopicSub:
    """A subscription in the topic model."""

    durable: bool
    cursor: int
    connected: bool = True


class TopicChecks:
    """Mixed into :class:`~.checker.Checker` (which sets the attributes below)."""

    published: list[Any]
    stamps: list[int]
    time_positions: int
    base: int
    subs: dict[str, TopicSub]
    reads: dict[str, list[int]]
    now: int
    groups: GroupModels

    def fail(self, text: str) -> NoReturn:
        raise NotImplementedError

    def _topic_op(self, op: AppliedOp) -> None:
        code, args = op.code, op.args
        end = len(self.published)
        if code in (C.TOPIC_SUBSCRIBE_AT_TIME, C.TOPIC_SEEK_TIME):
            code, args = time_as_offset(code, args, self.stamps, self.base)
            self.time_positions += 1
        if code == C.TOPIC_PUBLISH:
            op.expect(end)
            self.published.append(args[1])
            self.stamps.append(self.now)
            self.groups.feed(end, args[1], self.now)
            return
        if code == C.TOPIC_GC:
            durable = [s.cursor for s in self.subs.values() if s.durable]
            frontier = min(durable) if durable else end
            removed = max(0, frontier - self.base)
            op.expect(removed)
            for record in self.subs.values():
                record.cursor = max(record.cursor, frontier)
            self.base = max(self.base, frontier)
            return
        sid = args[1]
        sub = self.subs.get(sid)
        if code == C.TOPIC_SUBSCRIBE:
            if sub is None:
                self.subs[sid] = TopicSub(args[2] == "durable", end)
                op.expect("Subscribed")
            elif sub.connected:
                op.expect("AlreadyConnected")
            else:
                sub.connected = True
                op.expect("Reconnected")
        elif code == C.TOPIC_SUBSCRIBE_AT:
            if sub is None:
                start = args[3]
                at = {"head": self.base, "tail": end}.get(start, start)
                if not self.base <= at <= end:
                    op.expect(["out_of_range", at, self.base, end])
                    return
                self.subs[sid] = TopicSub(args[2] == "durable", at)
                self.reads.setdefault(sid, []).append(SEEK)
                op.expect(["ok", "Subscribed"])
            elif sub.connected:
                op.expect(["ok", "AlreadyConnected"])
            else:
                sub.connected = True
                op.expect(["ok", "Reconnected"])
        elif code == C.TOPIC_SEEK:
            if sub is None or not sub.connected:
                op.expect(["ok", None])
            elif not self.base <= args[2] <= end:
                op.expect(["out_of_range", args[2], self.base, end])
            else:
                sub.cursor = args[2]
                self.reads.setdefault(sid, []).append(SEEK)
                op.expect(["ok", args[2]])
        elif code == C.TOPIC_DISCONNECT:
            if sub is None or not sub.connected:
                op.expect(False)
            else:
                op.expect(True)
                if sub.durable:
                    sub.connected = False
                else:
                    del self.subs[sid]
        elif code == C.TOPIC_DELETE_SUBSCRIBER:
            op.expect(sub is not None)
            if sub is not None:
                del self.subs[sid]
                self.reads.setdefault(sid, []).append(SEEK)  # a new one starts at the tail
        elif code == C.TOPIC_ADVANCE:
            if sub is None or not sub.connected or sub.cursor >= end:
                op.expect(None)
                return
            if sub.cursor < self.base:
                self.fail(f"index {op.index}: {sid} reads offset {sub.cursor} below the "
                          f"retained base {self.base}")
            op.expect(self.published[sub.cursor])
            self.reads.setdefault(sid, []).append(sub.cursor)
            sub.cursor += 1
        elif code == C.TOPIC_ADVANCE_TO:
            if sub is None or not sub.connected:
                op.expect(None)
                return
            target = max(sub.cursor, min(args[2], end))
            if target > sub.cursor and sub.cursor < self.base:
                self.fail(f"index {op.index}: {sid} reads offset {sub.cursor} below the "
                          f"retained base {self.base}")
            self.reads.setdefault(sid, []).extend(range(sub.cursor, target))
            sub.cursor = target
            op.expect(target)

    def _check_reads(self) -> None:
        for sid, offsets in self.reads.items():
            durable = sid.startswith(("d", "r"))  # replayers are durable
            for a, b in itertools.pairwise(offsets):
                if SEEK in (a, b):  # a start or a seek: the reads continue from there
                    continue
                if b <= a or (durable and b != a + 1):
                    self.fail(f"subscriber {sid} read offset {b} after {a}: "
                              f"{'a gap or duplicate' if durable else 'out of order'}")

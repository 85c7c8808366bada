"""The work queue as the checker models it: items, leases, settlements, dead letters.

Replayed op by op in log order, every recorded result must be the model's: FIFO
claims with one live delivery per item, leases of ``visibility`` from leader time, a
retry limit, and repeated settlements answered with the first receipt (for the last
``RECEIPTS_KEPT`` settlements). Every delivery carries its item's id and the leader time
of its push (``enqueued``), which is never later than the delivery.

Scheduling is modelled on its own terms: claims take the highest priority level first
(FIFO within a level, level 0 in ``pending``); a delayed item (a push with a delay or a
nack with one) waits in ``delayed`` and joins its level's tail, in due order, at the
first claim or promotion at a leader time >= its due time. An item claimed before its
due time, or out of priority order, fails the run.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT

from .history import AppliedOp, Violation


@dataclass
class WorkModel:
    """One work queue's model state."""

    visibility: int = 0
    max_deliveries: int = 1
    next_item: int = 0
    next_delivery: int = 0
    pending: deque[tuple[int, str, int]] = field(default_factory=deque)
    live: dict[int, tuple[int, str, int, str, int]] = field(default_factory=dict)
    dead: list[int] = field(default_factory=list)
    acked: set[int] = field(default_factory=set)
    #: The leader time of each item's push.
    enqueued: dict[int, int] = field(default_factory=dict)
    #: The last RECEIPTS_KEPT settlements, oldest first (the receipts a repeat can get).
    settled: dict[int, tuple[str, str]] = field(default_factory=dict)
    #: Claimable items of the levels above 0 (``pending`` is level 0).
    levels: dict[int, deque[tuple[int, str, int]]] = field(default_factory=dict)
    #: The level of each item above level 0.
    priority: dict[int, int] = field(default_factory=dict)
    #: ``(due, arrival, item)`` of the items not claimable yet, a heap.
    delayed: list[tuple[int, int, tuple[int, str, int]]] = field(default_factory=list)
    arrivals: int = 0
    #: The due time of each item that has one now (checked at its delivery).
    due: dict[int, int] = field(default_factory=dict)
    #: Items delivered after waiting for a due time (a delayed push or nack).
    delivered_late: int = 0
    #: The first result of each ``WORK_PUSH_OPTIONS`` msg_id (a repeat answers it).
    first_push: dict[str, Any] = field(default_factory=dict)
    #: Pushes with options answered from the dedup window.
    repeats: int = 0

    def _ready(self) -> int:
        return len(self.pending) + sum(len(q) for q in self.levels.values())

    def _requeue(self, item: tuple[int, str, int], *, front: bool = False) -> None:
        level = self.priority.get(item[0], 0)
        queue = self.pending if level == 0 else self.levels.setdefault(level, deque())
        if front:
            queue.appendleft(item)
        else:
            queue.append(item)

    def _delay(self, item: tuple[int, str, int], due: int) -> None:
        heapq.heappush(self.delayed, (due, self.arrivals, item))
        self.arrivals += 1
        self.due[item[0]] = due

    def _promote(self, now: int) -> int:
        moved = 0
        while self.delayed and self.delayed[0][0] <= now:
            self._requeue(heapq.heappop(self.delayed)[2])
            moved += 1
        return moved

    def _take(self) -> tuple[int, str, int]:
        for level in sorted(self.levels, reverse=True):
            if self.levels[level]:
                return self.levels[level].popleft()
        return self.pending.popleft()

    def apply(self, op: AppliedOp, now: int) -> None:
        """Apply one work-queue op at leader time ``now`` and check its result."""
        code, args, result = op.code, op.args, op.result
        if code == C.WORK_PUSH:
            self.pending.append((self.next_item, args[1], 0))
            mask = result[1] if isinstance(result, list) and len(result) == 2 else None
            op.expect([self.next_item, mask])
            self.enqueued[self.next_item] = now
            self.next_item += 1
        elif code == C.WORK_PUSH_OPTIONS:
            self._push_options(op, now)
        elif code == C.WORK_PUSH_SCHEDULED:
            self._push_scheduled(op, args[5], args[1], args[2], args[3], args[4], now)
        elif code == C.WORK_PROMOTE:
            moved = self._promote(now)
            if not isinstance(result, list) or result[0] != moved:
                raise Violation(f"index {op.index}: promotion returned {result!r}, the model "
                                f"makes {moved} item(s) claimable")
        elif code == C.WORK_CLAIM:
            self._promote(now)
            if not self._ready():
                op.expect([None, 0])
                return
            got = result[0] if isinstance(result, list) else None
            self._lease(op, args[1], got, now)
        elif code == C.WORK_CLAIM_MANY:
            got = result[0] if isinstance(result, list) else None
            self._promote(now)
            if not isinstance(got, list) or len(got) != min(args[2], self._ready()):
                raise Violation(f"index {op.index}: claim of {args[2]} returned {got!r:.120} with "
                               f"{self._ready()} pending")
            for delivery in got:
                self._lease(op, args[1], delivery, now)
        elif code == C.WORK_RELEASE:
            worker = args[1]
            back = [self.live.pop(did) for did in dict.fromkeys(args[2])
                    if did in self.live and self.live[did][3] == worker]
            for gone in reversed(back):
                self._requeue((gone[0], gone[1], gone[2] - 1), front=True)
            if not isinstance(result, list) or result[0] != len(back):
                raise Violation(f"index {op.index}: release of {args[2]} by {worker} returned "
                               f"{result!r}, the model releases {len(back)}")
        elif code in (C.WORK_ACK, C.WORK_NACK, C.WORK_NACK_DELAYED):
            outcome = "acked" if code == C.WORK_ACK else "nacked"
            worker, did = args[1], args[2]
            answer = (result[0], result[3]) if isinstance(result, list) and len(
                result) == 4 else None
            wait = None
            if code == C.WORK_NACK_DELAYED:
                wait = (now if args[4] is None else int(args[4])) + args[3] if args[3] else None
            if not self._settle(worker, did, outcome, answer, wait):
                raise Violation(f"index {op.index}: {outcome[:-2]} of delivery {did} by {worker} "
                               f"returned {result!r}")
        elif code == C.WORK_SETTLE_MANY:
            worker, outcome, ids = args[1], args[2], args[3]
            rows = result[0] if isinstance(result, list) and len(result) == 2 else None
            if not isinstance(rows, list) or len(rows) != len(ids):
                raise Violation(f"index {op.index}: settling {ids} by {worker} returned {result!r}")
            for did, row in zip(ids, rows, strict=True):
                answer = (row[0], row[2]) if isinstance(row, list) and len(row) == 3 else None
                if not self._settle(worker, did, outcome, answer):
                    raise Violation(f"index {op.index}: {outcome[:-2]} of delivery {did} by "
                                   f"{worker} (one of {len(ids)}) returned {row!r}")
        elif code == C.WORK_EXTEND:
            live = self.live.get(args[2])
            extended = live is not None and live[3] == args[1]
            if extended and live is not None:
                self.live[args[2]] = (*live[:4], now + self.visibility)
            op.expect([extended, 0])
        elif code == C.WORK_REAP:
            reap_at = now if args[1] is None else int(args[1])
            expired = sorted(d for d, live in self.live.items() if live[4] < reap_at)
            for did in expired:
                self._fail_delivery(self.live.pop(did))
            if not isinstance(result, list) or result[0] != len(expired):
                raise Violation(f"index {op.index}: reap at {reap_at} returned {result!r}, "
                               f"the model expires {expired}")

    def _push_scheduled(self, op: AppliedOp, value: Any, level: int, delay: int | None,
                        not_before: int | None, at: int | None, now: int) -> None:
        item = (self.next_item, value, 0)
        at = now if at is None else int(at)
        due = at + delay if delay is not None else not_before
        if level:
            self.priority[self.next_item] = level
        if due is not None and due > at:
            self._delay(item, due)
        else:
            self._requeue(item)
        result = op.result
        op.expect([self.next_item, result[1] if isinstance(result, list) and len(result) == 2
                   else None])
        self.enqueued[self.next_item] = now
        self.next_item += 1

    def _push_options(self, op: AppliedOp, now: int) -> None:
        """``[name, options, now, value]``: as a scheduled push, once per msg_id (a
        repeat answers the first push's result, whatever its other options)."""
        options, value = op.args[1], op.args[3]
        msg_id = options.get("msg_id")
        if msg_id in self.first_push:
            self.repeats += 1
            op.expect(self.first_push[msg_id])
            return
        self._push_scheduled(op, value, options.get("priority", 0), options.get("delay_ms"),
                             options.get("not_before_ms"), op.args[2], now)
        if msg_id is not None:
            self.first_push[msg_id] = op.result

    def _settle(self, worker: str, did: int, outcome: str,
                answer: tuple[Any, Any] | None, due: int | None = None) -> bool:
        """Apply one settlement to the model; whether ``answer`` (settled, duplicate)
        is the one the model expects."""
        live = self.live.get(did)
        if live is not None and live[3] == worker:
            del self.live[did]
            self.settled[did] = (worker, outcome)
            if len(self.settled) > RECEIPTS_KEPT:
                del self.settled[next(iter(self.settled))]
            if outcome == "acked":
                self.acked.add(live[0])
                self.priority.pop(live[0], None)
            else:
                self._fail_delivery(live, due)
            return answer is not None and answer[0] is True and answer[1] is False
        # A repeated settlement is refused (or, in older formats, confirmed) and carries
        # the first receipt.
        earlier = self.settled.get(did) == (worker, outcome)
        return answer is not None and answer[1] is earlier and (
            answer[0] is False or answer[0] is earlier)

    def _lease(self, op: AppliedOp, worker: str, got: Any, now: int) -> None:
        item, value, attempts = self._take()
        due = self.due.pop(item, None)
        if due is not None:
            if due > now:
                raise Violation(f"index {op.index}: item {item} delivered at {now}, before "
                                f"its due time {due}")
            self.delivered_late += 1
        for other in self.live.values():
            if other[0] == item:
                raise Violation(f"index {op.index}: item {item} claimed while delivery "
                               f"{other} is live")
        if not isinstance(got, dict) or (got["item_id"], got["value"], got["attempt"],
                                         got["delivery_id"], got["worker"]) != (
                item, value, attempts + 1, self.next_delivery, worker):
            raise Violation(f"index {op.index}: claim returned {got!r}, the model says item "
                           f"{item} attempt {attempts + 1} delivery {self.next_delivery}")
        if got.get("enqueued") != self.enqueued.get(item) or got["enqueued"] > now:
            raise Violation(f"index {op.index}: item {item} delivered at {now} with enqueue "
                           f"stamp {got.get('enqueued')}, pushed at {self.enqueued.get(item)}")
        if got["deadline"] != now + self.visibility:
            raise Violation(f"index {op.index}: lease deadline {got['deadline']} is not "
                           f"leader time {now} + {self.visibility}")
        self.live[self.next_delivery] = (item, value, attempts + 1, worker, got["deadline"])
        self.next_delivery += 1

    def _fail_delivery(self, live: tuple[int, str, int, str, int],
                       due: int | None = None) -> None:
        item, value, attempt = live[0], live[1], live[2]
        if attempt < self.max_deliveries and due is not None:
            self._delay((item, value, attempt), due)
        elif attempt < self.max_deliveries:
            self._requeue((item, value, attempt))
        else:
            self.dead.append(item)

    def check_state(self, core: dict[str, Any]) -> None:
        """Compare a replica's captured work-queue core with the model."""
        pending = [p["item_id"] for p in core["pending"]]
        live = [d["delivery_id"] for d in core["in_flight"]]
        dead = [d["item_id"] for d in core["dead_letters"]]
        if pending != [p[0] for p in self.pending] or live != sorted(self.live) \
                or dead != self.dead:
            raise Violation("work queue state differs from the model")
        schedule = core.get("schedule") or {"levels": [], "delayed": []}
        levels = {level: [i["item_id"] for i in items] for level, items in schedule["levels"]}
        delayed = [(due, i["item_id"]) for due, i in schedule["delayed"]]
        if levels != {lv: [i[0] for i in q] for lv, q in self.levels.items() if q} or \
                delayed != [(e[0], e[2][0]) for e in sorted(self.delayed)]:
            raise Violation("work queue schedule (levels, delayed items) differs from the model")

    def check_drained(self) -> None:
        """Once drained, every item is acked or dead-lettered."""
        if self._ready() or self.live or self.delayed:
            raise Violation(f"work items neither acked nor dead-lettered after the drain: "
                            f"pending {[p[0] for p in self.pending]}, live {sorted(self.live)}, "
                            f"delayed {[e[2][0] for e in self.delayed]}")

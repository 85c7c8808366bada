"""The properties, checked against the committed history and what the clients saw.

The history (every op in log order, with the result of its first application) is
replayed through small independent models of the queue, work queue and topic; every
recorded result must be the model's. On top of that:

- every operation a client saw succeed is in the log, with the result the client got;
  one reported as certainly not applied is not in the log;
- a retried operation (same session and sequence number) is applied once;
- a push with a message id is applied once while its id is in the dedup window, and
  a repeat returns the first push's result (:mod:`.once`);
- queue: FIFO in commit order, every acknowledged push popped once or still queued;
- work queue: at most one live delivery per item; once drained every item is acked
  or dead-lettered;
- topics: a durable subscriber's reads are the committed publications in order from
  its subscription on, without gaps or duplicates; an ephemeral one's are in order;
- the final state of every replica equals the models' (and so each other's).
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from lazily_queue.replicated.work_queues import RECEIPTS_KEPT

from .history import AppliedOp, History, Violation
from .once import OnceModel
from .workload import FAILED, OK, QUEUE, TOPIC, WORK, Observed


class ClientRecord(Protocol):
    """A client's id and the operations it issued."""

    cid: str
    ops: list[Observed]


@dataclass
class _Work:
    visibility: int = 0
    max_deliveries: int = 1
    next_item: int = 0
    next_delivery: int = 0
    pending: deque[tuple[int, str, int]] = field(default_factory=deque)
    live: dict[int, tuple[int, str, int, str, int]] = field(default_factory=dict)
    dead: list[int] = field(default_factory=list)
    acked: set[int] = field(default_factory=set)
    #: The last RECEIPTS_KEPT settlements, oldest first (the receipts a repeat can get).
    settled: dict[int, tuple[str, str]] = field(default_factory=dict)


@dataclass
class _Sub:
    durable: bool
    cursor: int
    connected: bool = True


class Checker:
    """Replays a :class:`History` through the models and checks the client records."""

    def __init__(self, history: History, clients: Sequence[ClientRecord]) -> None:
        self.history = history
        self.clients = clients
        self.queue: deque[Any] | None = None
        self.capacity: int | None = None
        self.pushed: list[Any] = []
        self.popped: list[Any] = []
        self.work: _Work | None = None
        self.topic = False
        self.published: list[Any] = []
        self.base = 0
        self.subs: dict[str, _Sub] = {}
        self.reads: dict[str, list[int]] = {}
        self.now = 0
        self.ops = 0
        self.deduplicated = 0
        self.once = OnceModel()

    def fail(self, text: str) -> NoReturn:
        raise Violation(text)

    # -- replay ---------------------------------------------------------------------------

    def replay(self) -> None:
        seen: dict[tuple[int, int], AppliedOp] = {}
        for op in self.history.in_order():
            self.now = max(self.now, op.stamp)
            first = seen.get((op.session, op.seq))
            if first is not None:
                if op.index == first.index and op.session <= CLIENT_SESSION_BASE:
                    # A member numbers its ops once; a client's op may be proposed twice
                    # by one member (sent again through it) and land in one batch.
                    self.fail(f"op {op.session:x}/{op.seq} appears twice in batch {op.index}")
                if not (op.result == first.result or (
                        isinstance(op.result, OpError) and op.result.code == "duplicate")):
                    self.fail(f"retried op {op.session:x}/{op.seq} (index {op.index}) returned "
                              f"{op.result!r}, first {first.result!r} at {first.index}")
                self.deduplicated += 1
                continue
            seen[(op.session, op.seq)] = op
            self.ops += 1
            self._apply(op)

    def _expect(self, op: AppliedOp, expected: Any) -> None:
        if op.result != expected:
            self.fail(f"index {op.index}: {C.op_name(op.code)} {op.args!r:.80} returned "
                      f"{op.result!r:.120}, the model says {expected!r:.120}")

    def _apply(self, op: AppliedOp) -> None:
        code, args = op.code, op.args
        if code in C.ONCE_OPS:
            plain = self.once.plain(op)
            if plain is not None:
                self._apply(plain)
                self.once.applied_push(op)
            return
        if code == C.QUEUE_DECLARE:
            if self.queue is None:
                self.queue = deque()
                self.capacity = args[1]
        elif code in (C.QUEUE_PUSH, C.QUEUE_POP, C.QUEUE_UNPOP, C.QUEUE_POP_MANY,
                      C.QUEUE_UNPOP_MANY):
            self._queue_op(op)
        elif code == C.WORK_DECLARE:
            if self.work is None:
                self.work = _Work(args[1], args[2])
        elif C.WORK_PUSH <= code <= C.WORK_RELEASE or code == C.WORK_SETTLE_MANY:
            self._work_op(op)
        elif code == C.TOPIC_DECLARE:
            self.topic = True
        elif C.TOPIC_DECLARE < code <= C.TOPIC_ADVANCE_TO and code != C.TOPIC_RESTORE:
            if not self.topic:
                if not isinstance(op.result, OpError):
                    self.fail(f"index {op.index}: topic op before the declaration succeeded")
                return
            self._topic_op(op)

    def _queue_op(self, op: AppliedOp) -> None:
        q = self.queue
        if q is None:
            self._expect(op, OpError("unknown_queue", f"queue {QUEUE!r} has not been declared"))
            return
        if op.code == C.QUEUE_PUSH:
            if self.capacity is not None and len(q) >= self.capacity:
                self._expect(op, QueuePushError.Full)
                return
            q.append(op.args[1])
            self.pushed.append(op.args[1])
            self._expect(op, None)
        elif op.code == C.QUEUE_UNPOP:
            q.appendleft(op.args[1])
            self.pushed.append(op.args[1])
            self._expect(op, None)
        elif op.code == C.QUEUE_UNPOP_MANY:
            q.extendleft(reversed(op.args[1]))
            self.pushed.extend(op.args[1])
            self._expect(op, None)
        elif op.code == C.QUEUE_POP_MANY:
            if not q:
                if not isinstance(op.result, QueuePopError):
                    self.fail(f"index {op.index}: pop of an empty queue returned {op.result!r}")
                return
            taken = [q.popleft() for _ in range(min(op.args[1], len(q)))]
            self.popped.extend(taken)
            self._expect(op, taken)
        elif q:
            value = q.popleft()
            self.popped.append(value)
            self._expect(op, value)
        elif not isinstance(op.result, QueuePopError):
            self.fail(f"index {op.index}: pop of an empty queue returned {op.result!r}")

    def _work_op(self, op: AppliedOp) -> None:
        w = self.work
        if w is None:
            if not isinstance(op.result, OpError):
                self.fail(f"index {op.index}: work op before the declaration succeeded")
            return
        code, args, result = op.code, op.args, op.result
        if code == C.WORK_PUSH:
            w.pending.append((w.next_item, args[1], 0))
            mask = result[1] if isinstance(result, list) and len(result) == 2 else None
            self._expect(op, [w.next_item, mask])
            w.next_item += 1
        elif code == C.WORK_CLAIM:
            if not w.pending:
                self._expect(op, [None, 0])
                return
            got = result[0] if isinstance(result, list) else None
            self._lease(op, w, args[1], got)
        elif code == C.WORK_CLAIM_MANY:
            got = result[0] if isinstance(result, list) else None
            if not isinstance(got, list) or len(got) != min(args[2], len(w.pending)):
                self.fail(f"index {op.index}: claim of {args[2]} returned {got!r:.120} with "
                          f"{len(w.pending)} pending")
            for delivery in got:
                self._lease(op, w, args[1], delivery)
        elif code == C.WORK_RELEASE:
            worker = args[1]
            back = [w.live.pop(did) for did in dict.fromkeys(args[2])
                    if did in w.live and w.live[did][3] == worker]
            w.pending.extendleft((live[0], live[1], live[2] - 1) for live in reversed(back))
            if not isinstance(result, list) or result[0] != len(back):
                self.fail(f"index {op.index}: release of {args[2]} by {worker} returned "
                          f"{result!r}, the model releases {len(back)}")
        elif code in (C.WORK_ACK, C.WORK_NACK):
            outcome = "acked" if code == C.WORK_ACK else "nacked"
            worker, did = args[1], args[2]
            answer = (result[0], result[3]) if isinstance(result, list) and len(
                result) == 4 else None
            if not self._settle(w, worker, did, outcome, answer):
                self.fail(f"index {op.index}: {outcome[:-2]} of delivery {did} by {worker} "
                          f"returned {result!r}")
        elif code == C.WORK_SETTLE_MANY:
            worker, outcome, ids = args[1], args[2], args[3]
            rows = result[0] if isinstance(result, list) and len(result) == 2 else None
            if not isinstance(rows, list) or len(rows) != len(ids):
                self.fail(f"index {op.index}: settling {ids} by {worker} returned {result!r}")
                return
            for did, row in zip(ids, rows, strict=True):
                answer = (row[0], row[2]) if isinstance(row, list) and len(row) == 3 else None
                if not self._settle(w, worker, did, outcome, answer):
                    self.fail(f"index {op.index}: {outcome[:-2]} of delivery {did} by "
                              f"{worker} (one of {len(ids)}) returned {row!r}")
        elif code == C.WORK_EXTEND:
            live = w.live.get(args[2])
            extended = live is not None and live[3] == args[1]
            if extended and live is not None:
                w.live[args[2]] = (*live[:4], self.now + w.visibility)
            self._expect(op, [extended, 0])
        elif code == C.WORK_REAP:
            now = self.now if args[1] is None else int(args[1])
            expired = sorted(d for d, live in w.live.items() if live[4] < now)
            for did in expired:
                self._fail_delivery(w, w.live.pop(did))
            if not isinstance(result, list) or result[0] != len(expired):
                self.fail(f"index {op.index}: reap at {now} returned {result!r}, the model "
                          f"expires {expired}")

    def _settle(self, w: _Work, worker: str, did: int, outcome: str,
                answer: tuple[Any, Any] | None) -> bool:
        """Apply one settlement to the model; whether ``answer`` (settled, duplicate)
        is the one the model expects."""
        live = w.live.get(did)
        if live is not None and live[3] == worker:
            del w.live[did]
            w.settled[did] = (worker, outcome)
            if len(w.settled) > RECEIPTS_KEPT:
                del w.settled[next(iter(w.settled))]
            if outcome == "acked":
                w.acked.add(live[0])
            else:
                self._fail_delivery(w, live)
            return answer is not None and answer[0] is True and answer[1] is False
        # A repeated settlement is refused (or, in older formats, confirmed) and carries
        # the first receipt.
        earlier = w.settled.get(did) == (worker, outcome)
        return answer is not None and answer[1] is earlier and (
            answer[0] is False or answer[0] is earlier)

    def _lease(self, op: AppliedOp, w: _Work, worker: str, got: Any) -> None:
        item, value, attempts = w.pending.popleft()
        for other in w.live.values():
            if other[0] == item:
                self.fail(f"index {op.index}: item {item} claimed while delivery "
                          f"{other} is live")
        if not isinstance(got, dict) or (got["item_id"], got["value"], got["attempt"],
                                         got["delivery_id"], got["worker"]) != (
                item, value, attempts + 1, w.next_delivery, worker):
            self.fail(f"index {op.index}: claim returned {got!r}, the model says item "
                      f"{item} attempt {attempts + 1} delivery {w.next_delivery}")
        if got["deadline"] != self.now + w.visibility:
            self.fail(f"index {op.index}: lease deadline {got['deadline']} is not "
                      f"leader time {self.now} + {w.visibility}")
        w.live[w.next_delivery] = (item, value, attempts + 1, worker, got["deadline"])
        w.next_delivery += 1

    @staticmethod
    def _fail_delivery(w: _Work, live: tuple[int, str, int, str, int]) -> None:
        item, value, attempt = live[0], live[1], live[2]
        if attempt < w.max_deliveries:
            w.pending.append((item, value, attempt))
        else:
            w.dead.append(item)

    def _topic_op(self, op: AppliedOp) -> None:
        code, args = op.code, op.args
        end = len(self.published)
        if code == C.TOPIC_PUBLISH:
            self._expect(op, end)
            self.published.append(args[1])
            return
        if code == C.TOPIC_GC:
            durable = [s.cursor for s in self.subs.values() if s.durable]
            frontier = min(durable) if durable else end
            removed = max(0, frontier - self.base)
            self._expect(op, removed)
            for record in self.subs.values():
                record.cursor = max(record.cursor, frontier)
            self.base = max(self.base, frontier)
            return
        sid = args[1]
        sub = self.subs.get(sid)
        if code == C.TOPIC_SUBSCRIBE:
            if sub is None:
                self.subs[sid] = _Sub(args[2] == "durable", end)
                self._expect(op, "Subscribed")
            elif sub.connected:
                self._expect(op, "AlreadyConnected")
            else:
                sub.connected = True
                self._expect(op, "Reconnected")
        elif code == C.TOPIC_DISCONNECT:
            if sub is None or not sub.connected:
                self._expect(op, False)
            else:
                self._expect(op, True)
                if sub.durable:
                    sub.connected = False
                else:
                    del self.subs[sid]
        elif code == C.TOPIC_ADVANCE:
            if sub is None or not sub.connected or sub.cursor >= end:
                self._expect(op, None)
                return
            if sub.cursor < self.base:
                self.fail(f"index {op.index}: {sid} reads offset {sub.cursor} below the "
                          f"retained base {self.base}")
            self._expect(op, self.published[sub.cursor])
            self.reads.setdefault(sid, []).append(sub.cursor)
            sub.cursor += 1
        elif code == C.TOPIC_ADVANCE_TO:
            if sub is None or not sub.connected:
                self._expect(op, None)
                return
            target = max(sub.cursor, min(args[2], end))
            if target > sub.cursor and sub.cursor < self.base:
                self.fail(f"index {op.index}: {sid} reads offset {sub.cursor} below the "
                          f"retained base {self.base}")
            self.reads.setdefault(sid, []).extend(range(sub.cursor, target))
            sub.cursor = target
            self._expect(op, target)

    # -- client records ---------------------------------------------------------------------

    def check_clients(self) -> None:
        results = self.history.results
        acked: list[Any] = []
        for client in self.clients:
            for obs in client.ops:
                applied = results.get((obs.session, obs.seq))
                if obs.outcome == OK:
                    if applied is None:
                        self.fail(f"{client.cid}: acknowledged {C.op_name(obs.code)} "
                                  f"{obs.args!r:.60} (session {obs.session:x} seq {obs.seq}) "
                                  "is not in the committed log")
                    if applied.result != obs.result:
                        self.fail(f"{client.cid}: got {obs.result!r:.80} for "
                                  f"{C.op_name(obs.code)} at index {applied.index}, the "
                                  f"log says {applied.result!r:.80}")
                    if obs.code == C.QUEUE_PUSH and obs.result is None:
                        acked.append(obs.args[1])
                    elif obs.code == C.QUEUE_PUSH_ONCE and obs.result is None:
                        acked.append(obs.args[2])
                elif obs.outcome == FAILED and applied is not None:
                    self.fail(f"{client.cid}: {C.op_name(obs.code)} reported as not "
                              f"applied was applied at index {applied.index}")
                if obs.has_orphan_result and applied is not None and (
                        applied.result != obs.orphan_result):
                    self.fail(f"{client.cid}: late result {obs.orphan_result!r:.60} differs "
                              f"from the log's {applied.result!r:.60}")
        pushed = set(self.pushed)
        for value in acked:
            if value not in pushed:
                self.fail(f"acknowledged push {value!r} is not in the log")
        self._check_reads()

    def _check_reads(self) -> None:
        for sid, offsets in self.reads.items():
            durable = sid.startswith("d")
            for a, b in itertools.pairwise(offsets):
                if b <= a or (durable and b != a + 1):
                    self.fail(f"subscriber {sid} read offset {b} after {a}: "
                              f"{'a gap or duplicate' if durable else 'out of order'}")

    # -- the end ----------------------------------------------------------------------------

    def check_final(self, state: dict[str, Any]) -> None:
        """Compare a replica's captured state with the models; check the queue and work end."""
        self.once.check_final()
        queue = state.get("queues", {}).get(QUEUE)
        if self.queue is not None:
            elements = [] if queue is None else queue[2]
            if elements != list(self.queue):
                self.fail(f"queue holds {elements!r:.100}, the model {list(self.queue)!r:.100}")
            counts: dict[Any, int] = {}
            for v in self.pushed:
                counts[v] = counts.get(v, 0) + 1
            for v in self.popped:
                counts[v] = counts.get(v, 0) - 1
            for v in elements:
                counts[v] = counts.get(v, 0) - 1
            wrong = {v: c for v, c in counts.items() if c != 0}
            if wrong:
                self.fail(f"pushed values not popped once nor queued: {wrong!r:.200}")
        work = state.get("work_queues", {}).get(WORK)
        if self.work is not None and work is not None:
            core = work["core"]
            pending = [p["item_id"] for p in core["pending"]]
            live = [d["delivery_id"] for d in core["in_flight"]]
            dead = [d["item_id"] for d in core["dead_letters"]]
            if pending != [p[0] for p in self.work.pending] or live != sorted(self.work.live) \
                    or dead != self.work.dead:
                self.fail("work queue state differs from the model")
        topic = state.get("topics", {}).get(TOPIC)
        if topic is not None and (topic["base_offset"] != self.base
                                  or topic["elements"] != self.published[self.base:]):
            self.fail("topic retained log differs from the model")

    def check_drained(self) -> None:
        w = self.work
        if w is not None and (w.pending or w.live):
            self.fail(f"work items neither acked nor dead-lettered after the drain: pending "
                      f"{[p[0] for p in w.pending]}, live {sorted(w.live)}")

"""Transactions in the simulation: the worker that commits them, the checker's model.

:class:`TxnWorker` claims an item and settles it in a ``TXN`` together with what it
produces: an ack with a push of ``tx:<item_id>`` to the queue and, at random, a
publish to the topic; now and then a nack with a push of ``nx:<delivery_id>``. Whatever
went wrong (a timeout, a crash of its member, a full queue) it may send the same ops
again as a new transaction, often after its lease was reaped: a transaction that
already committed then aborts (``not_leased``), so nothing is produced twice.

:class:`TxnModel` is the checker's view: a committed ``TXN`` applies each of its ops
through the checker's models, each with the result the log recorded (an op that failed,
or that the models say would fail, makes the run fail), and an aborted one applies
nothing, after checking that the op it names would fail in the models, given the
transaction's earlier ops.
A transaction half applied leaves the replicas' state unlike the models' and fails the
final comparison. :meth:`TxnModel.check_final` asserts that no item's ``tx:`` output was
produced twice (an item is acked once).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .client import OK, QUEUE, TOPIC, WORK, Client, Host, Observed
from .history import AppliedOp, Violation
from .txn_options import TXO_QUEUE

if TYPE_CHECKING:
    from .checker import Checker


class TxnWorker(Client):
    """Claims, then settles and produces in one transaction (module docstring)."""

    kind = "txn-worker"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.txn: list[list[Any]] | None = None

    def next_op(self) -> None:
        if self.txn is not None:
            self.call(C.TXN, self.txn, self._done)
            return
        self.call(C.WORK_CLAIM, [WORK, self.cid, None], self._claimed, polling=True)

    def _claimed(self, obs: Observed) -> None:
        if obs.outcome != OK or not isinstance(obs.result, list) or obs.result[0] is None:
            return
        delivery = obs.result[0]
        did, item = int(delivery["delivery_id"]), int(delivery["item_id"])
        roll = self.rng.random()
        if roll < 0.1 and not self.draining:
            return  # the worker died: the lease expires and the reaper requeues the item
        if roll < 0.2 and not self.draining:
            self.txn = [[C.WORK_NACK, WORK, self.cid, did], [C.QUEUE_PUSH, QUEUE, f"nx:{did}"]]
            return
        self.txn = [[C.WORK_ACK, WORK, self.cid, did], [C.QUEUE_PUSH, QUEUE, f"tx:{item}"]]
        if self.rng.random() < 0.5:
            self.txn.insert(self.rng.randrange(0, 3), [C.TOPIC_PUBLISH, TOPIC, f"tx:{item}"])

    def _done(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome == OK and isinstance(result, list) and (
                result[0] is True or result[2] != "full"):
            self.txn = None  # committed, or aborted for good (the lease is gone)
            return
        # Unknown, refused, or the queue was full: the same ops again, or give up (the
        # lease expires).
        if self.rng.random() < 0.3:
            self.txn = None
        elif self.rng.random() < 0.5:
            self.node = self.rng.choice(self.cluster.member_ids())


class TxnModel:
    """The checker's transactions (module docstring)."""

    def __init__(self) -> None:
        self.committed = 0
        self.aborted: Counter[str] = Counter()
        self.outputs: Counter[str] = Counter()

    def apply(self, checker: Checker, op: AppliedOp) -> None:
        result = op.result
        if isinstance(result, OpError) or not isinstance(result, list) or not result:
            raise Violation(f"index {op.index}: transaction returned {result!r:.120}")
        if result[0] is True:
            self.committed += 1
            for inner, got in zip(op.args, result[1], strict=True):
                if isinstance(got, QueuePushError | OpError) or (
                        inner[0] in (C.WORK_ACK, C.WORK_NACK) and got[0] is not True):
                    raise Violation(f"index {op.index}: a committed transaction's "
                                    f"{C.op_name(inner[0])} failed ({got!r:.80}): the "
                                    "transaction was applied in part")
                checker.txn_options.txn_push(inner, checker.now)
                checker.apply_op(replace(op, code=inner[0], args=inner[1:], result=got))
                if inner[0] == C.QUEUE_PUSH and str(inner[2]).startswith("tx:"):
                    self.outputs[inner[2]] += 1
            return
        index, code = result[1], result[2]
        if not self._fails(checker, op.args, index, code):
            raise Violation(f"index {op.index}: transaction aborted at op {index} ({code}), "
                            f"which the models say would apply: {op.args!r:.160}")
        self.aborted[code] += 1

    def _fails(self, checker: Checker, ops: list[list[Any]], index: int, code: str) -> bool:
        """Whether op ``index`` of ``ops`` fails with ``code`` in the models, after the
        earlier ops of the transaction."""
        inner = ops[index]
        earlier = ops[:index]
        if code == "unknown_queue":
            return checker.queue is None and inner[0] == C.QUEUE_PUSH
        if code == "unknown_topic":
            return not checker.topic and inner[0] == C.TOPIC_PUBLISH
        if code == "unknown_work_queue":
            return checker.work is None
        if code == "full":
            if inner[1] == TXO_QUEUE:
                return checker.txn_options.refuses(inner, checker.now)
            if checker.queue is None or checker.capacity is None or inner[0] != C.QUEUE_PUSH:
                return False
            pushes = sum(1 for e in earlier if e[0] == C.QUEUE_PUSH)
            return len(checker.queue) + pushes >= checker.capacity
        if code == "not_leased":
            if checker.work is None or inner[0] not in (C.WORK_ACK, C.WORK_NACK):
                return False
            live = checker.work.live.get(inner[3])
            settled = any(e[0] in (C.WORK_ACK, C.WORK_NACK) and e[3] == inner[3] for e in earlier)
            return live is None or live[3] != inner[2] or settled
        return False

    def check_final(self) -> None:
        twice = {value: n for value, n in self.outputs.items() if n > 1}
        if twice:
            raise Violation(f"items whose transaction output was produced twice: "
                            f"{twice!r:.200}")

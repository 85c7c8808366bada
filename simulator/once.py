"""Exactly-once producers in the simulation: the client, and the checker's model.

:class:`OnceProducer` pushes unique values with a message id (to the queue, the work
queue or the topic, at random) and, whatever went wrong (a timeout, a crash of its
member, a clean refusal, a full queue), retries the same id, often through another
member, until a push is acknowledged; now and then it sends an acknowledged id once
more. :class:`OnceModel` is the checker's independent
model of the dedup window: an id is answered from the window while it is in it (bounded
by count and by the leader's stamp, as the contract says), so a push applied twice, or
a repeat answered with another result, fails the run; :meth:`OnceModel.check_final`
asserts that no id was applied twice.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from lazily_queue.core.dedup import DedupLimits
from lazily_queue.core.queue import QueuePushError
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .client import OK, QUEUE, TOPIC, WORK, Host, Observed
from .history import AppliedOp, Violation
from .workload import Producer

_TARGETS = ((C.QUEUE_PUSH_ONCE, QUEUE), (C.WORK_PUSH_ONCE, WORK), (C.TOPIC_PUBLISH_ONCE, TOPIC))


class OnceProducer(Producer):
    """Pushes with a message id and retries the same id until acknowledged."""

    kind = "once-producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.pending: tuple[int, list[Any]] | None = None
        self.retries = 0
        self.resend = False

    def next_op(self) -> None:
        if self.draining:
            self.stopped = True
            return
        if self.pending is None:
            self.n += 1
            code, target = self.rng.choice(_TARGETS)
            value = f"{self.cid}:{self.n}"
            self.pending = (code, [target, f"id-{value}", value])
        else:
            self.retries += 1
        code, args = self.pending
        obs = self.call(code, args, self._done)
        if obs is not None and self.rng.random() < 0.1:
            self.cluster.resubmit_later(self.node, obs)

    def _done(self, obs: Observed) -> None:
        if obs.outcome == OK and not isinstance(obs.result, QueuePushError | OpError):
            # Now and then the acknowledgement is taken as lost (a producer restarted
            # before it saw it): the same id is sent once more.
            if self.resend or self.rng.random() >= 0.2:
                self.pending, self.resend = None, False
            else:
                self.resend = True
            return
        if self.rng.random() < 0.5:  # the retry goes through another member
            self.node = self.rng.choice(self.cluster.member_ids())


class OnceModel:
    """The dedup window as the contract states it, keyed by (code, msg_id)."""

    def __init__(self, limits: DedupLimits | None = None) -> None:
        self.limits = limits or DedupLimits()
        self.window: dict[tuple[int, str], tuple[Any, int]] = {}
        self.applied: dict[tuple[int, str], int] = {}
        self.repeats = 0

    def plain(self, op: AppliedOp) -> AppliedOp | None:
        """The plain push ``op`` applies, or ``None`` when the window answers it (its
        result checked against the first push's)."""
        if len(op.args) != 3 or not isinstance(op.args[1], str):
            return None
        key = (op.code, op.args[1])
        horizon = op.stamp - self.limits.max_age_ms
        for old in [k for k, (_, at) in self.window.items() if at < horizon]:
            self._forget(old)
        found = self.window.get(key)
        if found is not None:
            self.repeats += 1
            if op.result != found[0]:
                raise Violation(f"index {op.index}: repeated msg_id {key[1]!r} returned "
                                f"{op.result!r:.80}, the first push {found[0]!r:.80}")
            return None
        return replace(op, code=C.ONCE_OPS[op.code], args=[op.args[0], op.args[2]])

    def applied_push(self, op: AppliedOp) -> None:
        """``op`` (a once op whose plain push the models applied) succeeded: record it."""
        if isinstance(op.result, QueuePushError | OpError):
            return
        key = (op.code, op.args[1])
        self.window[key] = (op.result, op.stamp)
        while len(self.window) > self.limits.max_entries:
            self._forget(next(iter(self.window)))
        self.applied[key] = self.applied.get(key, 0) + 1

    def _forget(self, key: tuple[int, str]) -> None:
        # Out of the window, the id may legitimately apply again.
        del self.window[key]
        self.applied.pop(key, None)

    def check_final(self) -> None:
        twice = {k[1]: n for k, n in self.applied.items() if n > 1}
        if twice:
            raise Violation(f"msg_ids applied more than once: {twice!r:.200}")

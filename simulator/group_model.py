"""Consumer groups as the checker models them: one work-queue model per group.

A group (``GROUP_DECLARE``) starts at the head (the topic's retained base) or the tail
of the topic model, with the retained elements from there pending; every publish then
feeds each group, numbered by its offset. The group's work-queue ops replay through
:class:`~.work_model.WorkModel`, which fails the run when an item is leased while
another delivery of it is live (two members holding one element). Drained, a group
has acked or dead-lettered every element from its start to the topic's end, each
once.

:class:`ExpiringGroupModel` models a group of a topic with expiry (its own topic, see
:mod:`.group_expiry`): an element enters it with its topic deadline and is never
delivered at or after it, counted expired instead (none lost silently).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from lazily_queue.core.groups import group_queue_name
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .history import AppliedOp, Violation
from .work_expiry import WorkExpiryModel
from .work_model import WorkModel


class GroupModels:
    """The groups of the simulated topic, by the name of their work queue."""

    def __init__(self) -> None:
        self.models: dict[str, WorkModel] = {}
        self.starts: dict[str, int] = {}
        #: Each publish's leader stamp, by offset (a group's items carry them).
        self.stamps: dict[int, int] = {}

    def declare(self, op: AppliedOp, base: int, published: list[Any]) -> None:
        topic, group, visibility, max_deliveries, start = op.args
        name = f"{topic}:{group}"
        if name in self.models:
            op.expect(["ok", None])
            return
        if isinstance(op.result, OpError):
            return  # refused (a bad request): nothing made
        first = {"head": base, "tail": len(published)}.get(start, start)
        model = WorkModel(visibility, max_deliveries, next_item=len(published))
        model.pending = deque((offset, published[offset], 0)
                              for offset in range(first, len(published)))
        model.enqueued.update({offset: self.stamps.get(offset, 0)
                               for offset in range(first, len(published))})
        self.models[name] = model
        self.starts[name] = first
        op.expect(["ok", None])

    def feed(self, offset: int, value: Any, now: int) -> None:
        """The topic published ``value`` at ``offset`` (leader time ``now``): every group
        gets it, stamped ``now``."""
        self.stamps[offset] = now
        for model in self.models.values():
            model.enqueued[offset] = now
            if model.next_item != offset:
                raise Violation(f"group item ids drifted from the topic's offsets: "
                                f"{model.next_item} for offset {offset}")
            model.pending.append((offset, value, 0))
            model.next_item += 1

    def apply(self, op: AppliedOp, now: int) -> None:
        model = self.models.get(op.args[0])
        if model is None:
            if not isinstance(op.result, OpError):
                raise Violation(f"index {op.index}: op on {op.args[0]!r} before its group "
                                "was declared")
            return
        model.apply(op, now)

    def check_state(self, queues: dict[str, Any]) -> None:
        for name, model in self.models.items():
            state = queues.get(name)
            if state is None or state.get("group") is None:
                raise Violation(f"group {name!r} is missing from the replica's state")
            model.check_state(state["core"])

    def settled(self) -> int:
        """Elements the groups acked or dead-lettered."""
        return sum(len(m.acked) + len(m.dead) for m in self.models.values())

    def check_drained(self, end: int) -> None:
        """Every element from each group's start acked or dead-lettered, once."""
        for name, model in self.models.items():
            model.check_drained()
            settled = sorted([*model.acked, *model.dead])
            wanted = list(range(self.starts[name], end))
            if settled != wanted:
                missing = sorted(set(wanted) - set(settled))
                raise Violation(f"group {name!r} settled {len(settled)} elements, not each "
                                f"of offsets {wanted[:1]}..{end} once (missing {missing[:10]})")


class ExpiringGroupModel(WorkExpiryModel):
    """A consumer group of a topic with an age limit (``age`` ms), as the contract
    states it: each publish enters the group (declared at the topic's tail) with the
    deadline ``stamp + min(own ttl, age)``, from then on expiring as a work item with a
    TTL does (:class:`~.work_expiry.WorkExpiryModel`: a claim never hands it out at or
    after its deadline, and every element is acked, dead, counted expired or held).
    The topic's own log is not modelled beyond its offsets."""

    def __init__(self, topic: str, group: str, age: int, visibility: int,
                 max_deliveries: int) -> None:
        super().__init__(group_queue_name(topic, group), visibility, max_deliveries)
        self.topic = topic
        self.age = age
        self.rules = False
        self.offsets = 0

    def apply(self, op: AppliedOp, now: int) -> None:
        if op.args[0] != self.topic:
            super().apply(op, now)
            return
        code, result = op.code, op.result
        if code == C.EXPIRY_RULES:
            self.rules = self.rules or result is None
        elif code == C.GROUP_DECLARE:
            if result == ["ok", None] and not self.declared:
                self.declared = True
                self.first = self.next_item = self.offsets
        elif code in (C.TOPIC_PUBLISH, C.TOPIC_PUBLISH_OPTIONS):
            if isinstance(result, OpError):
                return
            op.expect(self.offsets)
            self.offsets += 1
            if self.declared:
                ttl = op.args[1].get("ttl_ms") if code == C.TOPIC_PUBLISH_OPTIONS else None
                limits = [v for v in (ttl, self.age if self.rules else None) if v is not None]
                self.feed(op.args[-1], now, now + min(limits) if limits else None)
        # TOPIC_DECLARE, the topic's sweeps and GCs: its own log, not modelled

    def feed(self, value: Any, now: int, deadline: int | None) -> None:
        item = self.next_item
        self.pending.append((item, value, 0))
        self.enqueued[item] = now
        if deadline is not None:
            self.deadlines[item] = deadline
        self.next_item += 1

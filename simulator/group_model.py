"""Consumer groups as the checker models them: one work-queue model per group.

A group (``GROUP_DECLARE``) starts at the head (the topic's retained base) or the tail
of the topic model, with the retained elements from there pending; every publish then
feeds each group, numbered by its offset. The group's work-queue ops replay through
:class:`~.work_model.WorkModel`, which fails the run when an item is leased while
another delivery of it is live (two members holding one element). Drained, a group
has acked or dead-lettered every element from its start to the topic's end, each
once.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from lazily_queue.replicated.ops import OpError

from .history import AppliedOp, Violation
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

"""The event router of a node with no storage (no cell opened on it): its observers hear
every event, and a deletion's and a restore's hooks still run, in one reactive batch."""

from __future__ import annotations

from lazily_queue.reactive import Context
from lazily_queue.replicated.events import Deleted, QueueChanged, Restored
from lazily_queue.routing import EventRouter


def test_a_router_without_storages_still_runs_the_deletion_and_restore_hooks() -> None:
    ctx = Context()
    router = EventRouter(ctx, "1")
    observed: list[object] = []
    hooks: list[tuple[str, bool]] = []
    router.add_observer(observed.extend)
    router.on_deleted = lambda kind, name: hooks.append((f"{kind} {name}", ctx.in_batch))
    router.on_restored = lambda: hooks.append(("restored", ctx.in_batch))
    changed = QueueChanged("q", 1, 0)
    router.route([changed])
    assert observed == [changed] and hooks == []  # nothing to route it to
    router.route([changed, Deleted("queue", "q"), Restored()])
    assert hooks == [("queue q", True), ("restored", True)]
    assert len(observed) == 4

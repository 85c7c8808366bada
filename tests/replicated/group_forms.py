"""A state machine's snapshot in the form written before a consumer group's run of
retained values and its deadlines had their own: every group's items and deadlines
listed one by one, its stamps in full, no ``topic_log``."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated.state_machine import StateMachine


def older_form(sm: StateMachine) -> dict[str, Any]:
    """``sm.capture()`` in the older form."""
    state = sm.capture()
    for name, s in sm.work_queues.items():
        doc = state["work_queues"][name]
        doc["core"] = s.core.snapshot()
        doc.pop("topic_log", None)
        if state.get("work_stamps") is not None:
            state["work_stamps"][name] = s.core.stamps()
    for (kind, name), e in sm.expiry.items():
        state["expiry"][kind][name] = e.to_list(runs=False)
    return state

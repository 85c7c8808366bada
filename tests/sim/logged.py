"""Ops applied to a fresh state machine and logged as the simulator logs them, for the
checker models' tests."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated.state_machine import StateMachine
from simulator.history import AppliedOp

Step = tuple[int, int, list[Any]]


def applied(steps: list[Step]) -> tuple[StateMachine, list[AppliedOp]]:
    """Apply ``(stamp, code, args)`` in order (the stamps never go back), as logged ops."""
    sm = StateMachine()
    log: list[AppliedOp] = []
    for stamp, code, args in steps:
        sm.now = max(sm.now, stamp)
        result = sm.apply_plain(code, list(args))
        log.append(AppliedOp(len(log), 1, len(log) + 1, code, list(args), result, stamp))
    return sm, log

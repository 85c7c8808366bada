"""Applying ops to a bare state machine, as a member's proposals would arrive."""

from __future__ import annotations

from itertools import count
from typing import Any

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated.state_machine import StateMachine

_sessions = count(1)


def apply_fresh(sm: StateMachine, *op_list: list[Any], stamp: int = 1_000) -> list[Any]:
    """Apply ``op_list`` as one entry of a new member session (a repeat in a later call is
    a new proposal, not a session retry); the per-op results."""
    ops_with_seq = [[i + 1, *op] for i, op in enumerate(op_list)]
    result = sm.apply(encode_command(next(_sessions), 0, ops_with_seq), stamp)
    assert isinstance(result, list)
    return result

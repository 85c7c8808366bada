"""A member that becomes leader appends its state machine's leading ops
(:meth:`~lazily_queue.raft.fsm.FSM.leading_ops`) right after the entry starting its
term, before anything proposed or forwarded in the term; the replicated state machine
gives ``POPPED_CHECKING`` while it is not checking, nothing once it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cbor2

from lazily_queue.raft import entries
from lazily_queue.raft.replica import Replica
from lazily_queue.replicated import ops as C

from .harness import Manual


def _term_ops(replica: Replica) -> list[list[int]]:
    """The op codes of each entry of the current term in ``replica``'s log (``[]``: an
    entry that is not a command, such as the no-op starting the term)."""
    found = []
    for command, _index, term in replica.journal[:]:
        if term == replica.engine.term:
            decoded: Any = entries.command_of(command)
            found.append([] if decoded is None else [op[1] for op in cbor2.loads(decoded[1])[3]])
    return found


def test_a_new_leader_proposes_popped_checking_before_anything_else(tmp_path: Path) -> None:
    m = Manual(tmp_path)
    for node in m.ids:  # proposed before any leader is known: forwarded or retried later
        m.propose(node, C.QUEUE_DECLARE, [f"q{node}", None])
    leader = m.elect()
    for _ in range(20):
        m.now += 0.05
        m.round()
    logged = _term_ops(m.replicas[leader])
    assert logged[:2] == [[], [C.POPPED_CHECKING]], logged
    assert sum(codes.count(C.QUEUE_DECLARE) for codes in logged) == 3, logged
    assert all(view.popped_checking for view in m.views.values())


def test_a_leader_of_a_checking_state_proposes_nothing_first(tmp_path: Path) -> None:
    m = Manual(tmp_path)
    first = m.elect()
    for _ in range(10):
        m.round()
    assert all(view.popped_checking for view in m.views.values())
    m.replicas[first].engine.transfer_leadership(None, lambda result, outcome: None)
    for _ in range(200):
        m.now += 0.01
        m.round()
        leaders = [n for n, r in m.replicas.items() if r.engine.is_leader]
        if leaders and leaders[0] != first:
            break
    else:
        raise AssertionError("leadership did not move")
    second = m.replicas[leaders[0]]
    assert _term_ops(second) == [[]]  # the no-op starting its term alone


def test_a_leader_that_has_not_applied_the_marker_in_its_log_proposes_it_no_more(
        tmp_path: Path) -> None:
    """Every member restarts from its log (snapshots aside, nothing applied): the one
    elected holds POPPED_CHECKING in its log past what it applied, and proposes nothing
    first in its term; the state it then applies is checking."""
    m = Manual(tmp_path)
    m.declare_queue(m.elect())
    assert all(view.popped_checking for view in m.views.values())
    m.restart_all()  # every member restarts from its journal
    leader = m.elect()
    for _ in range(10):
        m.round()
    assert _term_ops(m.replicas[leader]) == [[]]  # the no-op starting its term alone
    assert all(view.popped_checking for view in m.views.values())
    logged = [entries.command_of(command) for command, _, _ in m.replicas[leader].journal[:]]
    assert sum(op[1] == C.POPPED_CHECKING for decoded in logged if decoded is not None
               for op in cbor2.loads(decoded[1])[3]) == 1

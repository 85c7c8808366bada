"""The simulator's check of the give-backs an ``on_orphan`` proposes (a pop whose caller
went away returns its elements to the head): one must apply, unless its member
restarted, its proposal failed with an error other than one saying it did not apply, or
it failed without applying and a later attempt follows. A give-back fenced off by its member
session's floor (its first appearance answered "duplicate": never applied) lost its
elements unseen, and fails the check."""

from __future__ import annotations

from itertools import count
from types import SimpleNamespace
from typing import Any, cast

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from simulator.cancelled_pops import CancellingConsumer, OrphanGiveBack
from simulator.client import QUEUE
from simulator.cluster import Cluster
from simulator.given_back import check_orphan_give_backs
from simulator.history import History, RecordingStateMachine, Violation

MEMBER = 5
RUNS = [[1, 2]]


class _Run:
    def __init__(self) -> None:
        self.history = History()
        self.sm = RecordingStateMachine("n1", self.history)
        self.index = count(1)

    def batch(self, seq: int, floor: int, code: int, *args: Any) -> Any:
        index = next(self.index)
        self.sm.index_source = lambda: index
        result = self.sm.apply(encode_command(MEMBER, floor, [[seq, code, *args]]),
                               1_000 + index)
        assert isinstance(result, list)
        return result[0]


def _popped(run: _Run) -> list[Any]:
    assert run.batch(1, 1, C.QUEUE_DECLARE, QUEUE, None) is None
    assert run.batch(2, 2, C.QUEUE_PUSH, QUEUE, "a") is None
    values, runs = run.batch(3, 3, C.QUEUE_POP_STAMPED, QUEUE, 1)
    assert values == ["a"]
    return cast(list[Any], runs)


def _check(run: _Run, entry: OrphanGiveBack, incarnation: int = 1) -> dict[str, int]:
    client = SimpleNamespace(cid="cc1", orphan_give_backs=[entry])
    cluster = SimpleNamespace(nodes={"1": SimpleNamespace(incarnation=incarnation)})
    return check_orphan_give_backs(run.history, cast(CancellingConsumer, client),
                                   cast(Cluster, cluster))


def test_an_applied_orphan_give_back_passes() -> None:
    run = _Run()
    runs = _popped(run)
    assert run.batch(4, 4, C.QUEUE_UNPOP_STAMPED, QUEUE, ["a"], runs) is None
    entry = OrphanGiveBack("1", 1, MEMBER, 4, ["a"], answered=True)
    assert _check(run, entry) == {"applied": 1, "restarted": 0, "failed": 0, "retried": 0}


def _fenced(run: _Run) -> OrphanGiveBack:
    """The member gives its give-back (seq 4) up and numbers on; its stale copy commits
    after the floor passed it: answered "duplicate", never applied."""
    runs = _popped(run)
    assert run.batch(5, 5, C.QUEUE_PUSH, QUEUE, "b") is None
    answer = run.batch(4, 4, C.QUEUE_UNPOP_STAMPED, QUEUE, ["a"], runs)
    assert isinstance(answer, OpError) and answer.code == "duplicate"
    assert (MEMBER, 4) in run.history.fenced
    return OrphanGiveBack("1", 1, MEMBER, 4, ["a"], result=answer, answered=True)


def test_a_fenced_orphan_give_back_is_caught() -> None:
    run = _Run()
    entry = _fenced(run)
    with pytest.raises(Violation, match=r"never applied \(first logged at index 5\) and was "
                                        "answered OpError.*lost unseen"):
        _check(run, entry)


def test_an_orphan_give_back_lost_with_a_restart_is_excused() -> None:
    run = _Run()
    entry = _fenced(run)
    assert _check(run, entry, incarnation=2)["restarted"] == 1


def test_an_orphan_give_back_never_answered_is_caught() -> None:
    run = _Run()
    _popped(run)
    entry = OrphanGiveBack("1", 1, MEMBER, 4, ["a"])
    with pytest.raises(Violation, match="was never answered"):
        _check(run, entry)


def test_an_orphan_give_back_failed_unapplied_must_go_again() -> None:
    run = _Run()
    _popped(run)
    entry = OrphanGiveBack("1", 1, MEMBER, 4, ["a"], error="NoQuorum", answered=True,
                           transient=True)
    with pytest.raises(Violation, match=r"failed without applying \(NoQuorum\) and was "
                                        "never proposed again"):
        _check(run, entry)
    entry.retried = True
    assert _check(run, entry)["retried"] == 1
    refused = OrphanGiveBack("1", 1, MEMBER, 4, ["a"], error="ProposalRejected",
                             answered=True)
    assert _check(run, refused)["failed"] == 1

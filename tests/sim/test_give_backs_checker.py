"""The simulator's give-back checks (:mod:`simulator.session_givers`): a client pops a
batch, hands out part and gives the rest back; the rest is taken again next, in order,
once. A give-back whose apply drops an element, a pop passing a given-back element by,
a give-back sent twice that applied twice, and a client that cannot account for an
element it took each fail the check."""

from __future__ import annotations

from collections import deque
from itertools import count
from typing import Any

import pytest

from lazily_queue.core import ids
from lazily_queue.core.fifo import Fifo
from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from simulator.client import QUEUE
from simulator.give_back_checks import check_give_backs
from simulator.history import History, RecordingStateMachine, Violation
from simulator.session_givers import SessionGiver

MEMBER = 5
SID = CLIENT_SESSION_BASE + 77


class _Run:
    """One replica applying a member's proposals and a giver's client ops."""

    def __init__(self) -> None:
        self.history = History()
        self.sm = RecordingStateMachine("n1", self.history)
        self.index = count(1)
        self.seq = count(1)
        self.client_seq = count(1)

    def member(self, code: int, *args: Any) -> Any:
        index = next(self.index)
        self.sm.index_source = lambda: index
        result = self.sm.apply(encode_command(MEMBER, 0, [[next(self.seq), code, *args]]),
                               1_000 + index)
        assert isinstance(result, list)
        return result[0]

    def client(self, code: int, *args: Any, floor: int | None = None) -> Any:
        seq = next(self.client_seq)
        return self.member(C.CLIENT_OP, SID, seq, seq if floor is None else floor, code,
                           *args)

    def queued(self) -> list[Any]:
        return list(self.sm.capture()["queues"][QUEUE][2])


def _giver(handed: list[Any]) -> SessionGiver:
    giver = object.__new__(SessionGiver)
    giver.cid, giver.session = "gv1", SID
    giver.handed = list(handed)
    giver.stranded = {"died": [], "unsent": [], "refused": []}
    giver.refused_seqs, giver.refused_told = {}, {}
    giver.retried_applied = 0
    giver.refused_holding = []
    giver.twice, giver.twice_refused = {}, {}
    return giver


def _prefetch_then_give_back(run: _Run) -> tuple[SessionGiver, list[Any]]:
    """Four pushed; the giver pops three, hands out one, gives two back."""
    assert run.member(C.QUEUE_DECLARE, QUEUE, None) is None
    for value in "abcd":
        assert run.member(C.QUEUE_PUSH, QUEUE, value) is None
    values, runs = run.client(C.QUEUE_POP_STAMPED, QUEUE, 3)
    assert values == ["a", "b", "c"]
    assert run.client(C.QUEUE_UNPOP_STAMPED, QUEUE, values[1:], ids.tail(runs, 2)) is None
    return _giver(values[:1]), values[1:]


def test_given_back_elements_are_taken_again_first_in_order() -> None:
    run = _Run()
    giver, _ = _prefetch_then_give_back(run)
    assert run.member(C.QUEUE_POP_STAMPED, QUEUE, 2)[0] == ["b", "c"]
    stats = check_give_backs(run.history, [giver], run.queued())
    assert stats["give_backs"] == 1
    assert stats["taken_again"] == 2
    assert stats["head_checked"] == 2


def test_given_back_elements_still_queued_at_the_end_pass() -> None:
    run = _Run()
    giver, _ = _prefetch_then_give_back(run)
    assert run.queued() == ["b", "c", "d"]
    assert check_give_backs(run.history, [giver], run.queued()).get("taken_again", 0) == 0


def _drops_its_last(self: Fifo[Any], values: list[Any], runs: list[Any],
                    headers: Any = None) -> None:
    keep = len(values) - 1
    first = ids.take(deque(ids.checked_runs(runs)), keep)
    _REAL(self, values[:keep], first, headers)


_REAL = Fifo.unpop_stamped


@pytest.mark.parametrize("pop_after", [True, False])
def test_a_give_back_dropping_its_last_element_is_caught(
        monkeypatch: pytest.MonkeyPatch, pop_after: bool) -> None:
    monkeypatch.setattr(Fifo, "unpop_stamped", _drops_its_last)
    run = _Run()
    giver, _ = _prefetch_then_give_back(run)
    if pop_after:
        assert run.member(C.QUEUE_POP_STAMPED, QUEUE, 2)[0] == ["b", "d"]
        with pytest.raises(Violation, match="took 'd' where 'c', given back by gv1"):
            check_give_backs(run.history, [giver], run.queued())
    else:
        with pytest.raises(Violation, match="'c' a giver gave back was never taken again"):
            check_give_backs(run.history, [giver], run.queued())


def test_an_element_the_giver_cannot_account_for_is_caught() -> None:
    run = _Run()
    giver, _ = _prefetch_then_give_back(run)
    giver.handed = []  # 'a' taken, neither handed out, given back nor kept
    with pytest.raises(Violation, match=r"gv1: its pops took \['a'\]"):
        check_give_backs(run.history, [giver], run.queued())


def test_a_refused_retry_of_an_applied_give_back_counts_as_given_back() -> None:
    """Refused after an attempt went unanswered: its outcome unknown to the client."""
    run = _Run()
    giver, rest = _prefetch_then_give_back(run)
    giver.refused_seqs = {2: rest}  # the gate refused its retry: its first attempt applied
    stats = check_give_backs(run.history, [giver], run.queued())
    assert stats["refused_unknown_applied"] == 1
    assert stats.get("refused", 0) == 0


def test_a_give_back_told_not_applied_that_applied_is_caught() -> None:
    run = _Run()
    giver, rest = _prefetch_then_give_back(run)
    giver.refused_told = {2: rest}  # told not applied: its first attempt applied
    giver.stranded["refused"].extend(rest)
    with pytest.raises(Violation, match=r"gv1: give-back \(seq 2\) applied at index \d+, "
                       "though the client was told it was not applied"):
        check_give_backs(run.history, [giver], run.queued())


def test_a_gate_refusing_a_pop_its_member_holds_is_caught() -> None:
    """A member that holds the pop as applied in the session (say, restored from a
    snapshot taken after it) and refused its give-back lost the record: the run fails."""
    run = _Run()
    giver, _ = _prefetch_then_give_back(run)
    giver.refused_holding.append("give-back (seq 2) refused by 1 (incarnation 2), which "
                                 "holds its pop (seq 1, index 6) as applied in the session")
    with pytest.raises(Violation, match=r"gv1: give-back \(seq 2\) refused by 1"):
        check_give_backs(run.history, [giver], run.queued())


@pytest.mark.parametrize("code", [C.QUEUE_UNPOP_STAMPED_CHECKED, C.QUEUE_UNPOP_STAMPED])
def test_a_give_back_sent_twice_applies_once_or_is_caught(code: int) -> None:
    """The same elements given back under a second sequence number (through another
    member, at once): checked, the second is refused as it applies and the giver keeps
    nothing of it; unchecked, both apply, and the check names it."""
    run = _Run()
    assert run.member(C.QUEUE_DECLARE, QUEUE, None) is None
    for value in "abc":
        assert run.member(C.QUEUE_PUSH, QUEUE, value) is None
    assert run.client(C.QUEUE_UNPOP_STAMPED_CHECKED, QUEUE, [], []) is None  # the first
    values, runs = run.client(C.QUEUE_POP_STAMPED, QUEUE, 2)
    assert run.client(code, QUEUE, values, runs) is None  # seq 3
    second = run.client(code, QUEUE, values, runs, floor=3)  # seq 4
    giver = _giver([])
    giver.twice = {3: 4}
    if code == C.QUEUE_UNPOP_STAMPED:
        assert second is None and run.queued() == ["a", "b", "a", "b", "c"]
        with pytest.raises(Violation, match=r"gv1: one give-back sent twice \(seq 3 and 4"):
            check_give_backs(run.history, [giver], run.queued())
        return
    assert isinstance(second, C.OpError) and run.queued() == ["a", "b", "c"]
    giver.twice_refused = {3: values}  # had a gate refused a retry of it: nothing kept
    stats = check_give_backs(run.history, [giver], run.queued())
    assert stats["sent_twice"] == 1 and stats["refused_applying"] == 1

"""The engine answers with its own outcomes, and a declaration's timeout is named."""

from __future__ import annotations

from pathlib import Path

from pysyncobj.config import FAIL_REASON

from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.raft.outcome import MAYBE_APPLIED, RETRYABLE, Outcome, from_pysyncobj
from lazily_queue.replicated import ops

from .harness import Manual


def test_every_pysyncobj_code_has_its_own_outcome() -> None:
    codes = {getattr(FAIL_REASON, n) for n in dir(FAIL_REASON) if n.isupper()}
    outcomes = {from_pysyncobj(code) for code in codes}
    assert len(outcomes) == len(codes) and Outcome.UNRECOGNISED not in outcomes
    assert from_pysyncobj(99) is Outcome.UNRECOGNISED
    assert MAYBE_APPLIED <= RETRYABLE and Outcome.REQUEST_DENIED not in RETRYABLE


def test_membership_answers_are_outcomes(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    answers: list[Outcome] = []
    cluster.replicas[leader].engine.remove_member(leader, lambda _, o: answers.append(o))
    follower = next(n for n in cluster.ids if n != leader)
    cluster.replicas[follower].engine.transfer_leadership(None, lambda _, o: answers.append(o))
    assert answers == [Outcome.REQUEST_DENIED, Outcome.NOT_LEADER]


def test_a_declaration_that_times_out_is_named_in_the_error(tmp_path: Path) -> None:
    cluster = Manual(tmp_path, ("1",))
    leader = cluster.elect()
    cluster.propose(leader, ops.QUEUE_DECLARE, ["q", None], timeout=1.0)
    cluster.now += 2.0
    cluster.step(leader)
    [(result, error)] = cluster.results
    assert result is None and isinstance(error, CommitTimeout)
    assert str(error).startswith("queue_declare did not commit before its deadline")

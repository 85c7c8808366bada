"""The checks of what clients were handed: every op applied under a client session
answered with its result, no queue element delivered to two consumers."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_results import NOT_KEPT
from simulator.client import FAILED, OK, QUEUE, UNKNOWN, Observed
from simulator.deliveries import check_session_answers, check_single_delivery
from simulator.history import AppliedOp, History, Violation
from simulator.session_client import SessionConsumer, SessionGroupMember, SessionWorker
from simulator.workload import Consumer

ROOT = Path(__file__).resolve().parents[2]


class _Host:
    def member_ids(self) -> list[str]:
        return ["1", "2", "3"]

    def running(self, n: str) -> bool:
        return True


def _consumer(cls: Any = SessionConsumer, cid: str = "sc1") -> Any:
    return cls(cid, _Host(), random.Random(1))


def _applied(history: History, session: int, seq: int, code: int, args: list[Any],
             result: Any, index: int = 7) -> None:
    history.results[(session, seq)] = AppliedOp(index, session, seq, code, args, result, 0)


def test_a_pop_applied_and_answered_with_its_result_passes() -> None:
    history, consumer = History(), _consumer()
    _applied(history, consumer.session, 1, C.QUEUE_POP, [QUEUE], "a")
    consumer.answers[1] = "a"
    assert check_session_answers(history, [consumer]) == 1


def test_a_pop_applied_but_never_answered_lost_its_element() -> None:
    history, consumer = History(), _consumer()
    _applied(history, consumer.session, 3, C.QUEUE_POP_MANY, [QUEUE, 2], ["a", "b"])
    with pytest.raises(Violation, match=r"sc1: queue_pop_many .* never answered"):
        check_session_answers(history, [consumer])


def test_a_retried_claim_answered_with_another_result_is_caught() -> None:
    history, worker = History(), _consumer(SessionWorker, "sw1")
    _applied(history, worker.session, 2, C.WORK_CLAIM, ["w", "sw1", None],
             [{"delivery_id": 4}, 3])
    worker.answers[2] = [{"delivery_id": 5}, 3]
    with pytest.raises(Violation, match=r"sw1: work_claim .* was answered"):
        check_session_answers(history, [worker])


def test_a_push_answered_applied_with_its_result_not_kept_passes() -> None:
    history, consumer = History(), _consumer()
    _applied(history, consumer.session, 4, C.QUEUE_PUSH, [QUEUE, "a"], None)
    consumer.answers[4] = NOT_KEPT
    assert check_session_answers(history, [consumer]) == 1


def test_a_pop_answered_applied_with_its_result_not_kept_lost_its_element() -> None:
    history, consumer = History(), _consumer()
    _applied(history, consumer.session, 4, C.QUEUE_POP, [QUEUE], "a")
    consumer.answers[4] = NOT_KEPT
    with pytest.raises(Violation, match=r"sc1: queue_pop \(seq 4\) was answered"):
        check_session_answers(history, [consumer])


def test_a_session_client_seed_answered_not_kept_after_its_session_was_given_up() -> None:
    """Seed 395: a push sent through two members applied through the second; the first
    member's retry arrived after the session was given up for the bound and was answered
    that it applied, its result no longer kept."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, "-m", "simulator", "--seed", "395"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "seed 395: ok" in proc.stdout


def test_ops_of_other_sessions_are_not_a_client_s() -> None:
    history, consumer = History(), _consumer()
    _applied(history, consumer.session + 1, 1, C.QUEUE_POP, [QUEUE], "a")
    assert check_session_answers(history, [consumer]) == 0


def _obs(code: int, args: list[Any], outcome: str, result: Any = None) -> Observed:
    return Observed("co1", "1", 0, 1, code, args, 0.0, outcome=outcome, result=result)


def test_an_element_delivered_to_two_consumers_is_caught() -> None:
    session = _consumer()
    session.delivered = ["a", "b"]
    plain = _consumer(Consumer, "co1")
    plain.ops = [_obs(C.QUEUE_POP, [QUEUE], OK, "b")]
    with pytest.raises(Violation, match="element 'b' was delivered 2 times \\(to co1, sc1\\)"):
        check_single_delivery(Counter({"a": 1, "b": 1}), [session, plain])


def test_an_element_put_back_and_delivered_again_counts_once() -> None:
    session = _consumer()
    session.delivered = ["b"]
    plain = _consumer(Consumer, "co1")
    plain.ops = [_obs(C.QUEUE_POP_MANY, [QUEUE, 2], OK, ["a", "b"]),
                 _obs(C.QUEUE_UNPOP_MANY, [QUEUE, ["b"]], FAILED),
                 _obs(C.QUEUE_UNPOP_MANY, [QUEUE, ["b"]], UNKNOWN),
                 _obs(C.QUEUE_POP, [QUEUE], UNKNOWN, "c")]
    assert check_single_delivery(Counter({"a": 1, "b": 1, "c": 1}), [session, plain]) == 2


def test_an_element_pushed_twice_may_be_delivered_twice() -> None:
    first, second = _consumer(), _consumer(cid="sc2")
    first.delivered, second.delivered = ["a"], ["a"]
    assert check_single_delivery(Counter({"a": 2}), [first, second]) == 2
    with pytest.raises(Violation, match="pushed 1 times"):
        check_single_delivery(Counter({"a": 1}), [first, second])


def test_a_session_consumer_keeps_what_its_pops_returned() -> None:
    consumer = _consumer()
    consumer.answered(C.QUEUE_POP, [QUEUE], "a")
    consumer.answered(C.QUEUE_POP_MANY, [QUEUE, 3], ["b", "c"])
    consumer.answered(C.QUEUE_POP, [QUEUE], OK_EMPTY)
    assert consumer.delivered == ["a", "b", "c"]


def test_a_session_worker_acks_the_delivery_its_claim_returned() -> None:
    worker = _consumer(SessionWorker, "sw1")
    assert worker.next_inner() == (C.WORK_CLAIM, ["w", "sw1", None])
    worker.answered(C.WORK_CLAIM, ["w", "sw1", None], [{"delivery_id": 9}, 3])
    assert worker.next_inner() == (C.WORK_ACK, ["w", "sw1", 9])
    worker.answered(C.WORK_ACK, ["w", "sw1", 9], [None, 3])
    assert worker.next_inner() == (C.WORK_CLAIM, ["w", "sw1", None])


def test_a_session_group_member_works_its_groups_queue() -> None:
    member = SessionGroupMember("sg1", _Host(), random.Random(1), "g1")
    assert member.next_inner() == (C.WORK_CLAIM, ["t:g1", "sg1", None])
    member.answered(C.WORK_CLAIM, ["t:g1", "sg1", None], [{"delivery_id": 2}, 3])
    assert member.next_inner() == (C.WORK_ACK, ["t:g1", "sg1", 2])
    member.answered(C.WORK_ACK, ["t:g1", "sg1", 2], [True, 3, [2, "acked"], False])
    assert member.acked == 1 and member.next_inner()[0] == C.WORK_CLAIM


OK_EMPTY = object()  # an empty queue's answer: not an element

"""Pops through the real ``Driver.call`` on a simulated member alone: a pop committed
inside ``propose`` whose caller is cancelled in that turn gives its element back through
``on_orphan``, and the check catches the element lost when that fix is undone."""

from __future__ import annotations

import random

import pytest

from lazily_queue.replicated import ops as C
from simulator import cancelled_pops
from simulator.cancelled_pops import CancellingConsumer
from simulator.client import QUEUE
from simulator.cluster import Cluster
from simulator.defects import without
from simulator.given_back import check_given_back
from simulator.history import Violation
from simulator.scenario import Scenario


def _member_alone_with(values: list[str]) -> Cluster:
    c = Cluster(Scenario(seed=1, nodes=1, inline_fsync_below=1.0))  # fsyncs inline
    c.start_node("1")
    c.run_until(1.0)
    c.propose_detached("1", C.QUEUE_DECLARE, [QUEUE, None])
    for value in values:
        c.propose_detached("1", C.QUEUE_PUSH, [QUEUE, value])
    c.run_until(1.5)
    return c


def _queued(c: Cluster) -> list[str]:
    view = c.nodes["1"].view
    assert view is not None
    return list(view.capture()["queues"][QUEUE][2])


def _pop_cancelled_when_ready(monkeypatch: pytest.MonkeyPatch) -> tuple[Cluster,
                                                                         CancellingConsumer]:
    monkeypatch.setattr(cancelled_pops, "CANCEL_READY", 1.0)
    monkeypatch.setattr(cancelled_pops, "CANCEL_WAITING", 0.0)
    monkeypatch.setattr(cancelled_pops, "CANCEL_IN_STEP", 0.0)
    c = _member_alone_with(["a"])
    consumer = CancellingConsumer("cc1", c, random.Random(4))
    consumer.next_op()
    c.run_until(2.0)
    return c, consumer


def test_a_pop_committed_inside_propose_and_cancelled_gives_its_element_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    c, consumer = _pop_cancelled_when_ready(monkeypatch)
    assert (consumer.stepped_now, consumer.cancelled_ready, consumer.given_back) == (1, 1, 1)
    assert consumer.ops[0].outcome == "unknown" and consumer.ops[0].has_orphan_result
    assert check_given_back(c.history, [consumer], c) == 1
    assert _queued(c) == ["a"]


def test_the_check_catches_the_element_lost_without_the_give_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with without("orphan-result-of-cancelled-call"):
        c, consumer = _pop_cancelled_when_ready(monkeypatch)
    assert (consumer.stepped_now, consumer.given_back) == (1, 0)
    assert _queued(c) == []
    with pytest.raises(Violation, match="neither its caller nor its on_orphan"):
        check_given_back(c.history, [consumer], c)

"""Leadership transfer under steady writes: the leader pauses proposals until the target
holds its whole log, then sends ``timeout_now``; what was proposed meanwhile commits
once, at the new leader."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from lazily_queue.raft import patches
from lazily_queue.raft.outcome import Outcome
from lazily_queue.replicated import ops as C

from .harness import Manual

TICK = 0.01


def _writes_during_a_transfer(root: Path, rounds: int = 300) -> tuple[Manual, str, str,
                                                                      list[Outcome]]:
    """A push proposed on every member at every tick while the leader hands over to a
    follower (asked at the second tick); returns the cluster, both leaders and the
    transfer's answers."""
    cluster = Manual(root)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    target = next(n for n in cluster.ids if n != leader)
    answers: list[Outcome] = []
    value = 0
    for tick in range(rounds):
        for node in cluster.ids:
            cluster.propose(node, C.QUEUE_PUSH, ["q", value])
            value += 1
        if tick == 1:
            cluster.replicas[leader].engine.transfer_leadership(
                target, lambda _r, outcome: answers.append(outcome))
        cluster.now += TICK
        cluster.round()
    for _ in range(300):  # then quiet until everything proposed has committed
        cluster.now += TICK
        cluster.round()
    return cluster, leader, target, answers


def test_a_transfer_under_steady_writes_hands_over_and_loses_nothing(tmp_path: Path) -> None:
    cluster, leader, target, answers = _writes_during_a_transfer(tmp_path)
    assert answers == [Outcome.SUCCESS]
    assert cluster.replicas[target].engine.is_leader
    assert not cluster.replicas[leader].engine.is_leader
    assert cluster.replicas[leader].engine.transfer.held == []
    assert not cluster.replicas[leader].engine.transfer.pending
    pushed = 300 * len(cluster.ids)
    assert all(error is None for _, error in cluster.results[1:]), cluster.results[:5]
    assert len(cluster.results) == 1 + pushed  # the declaration, then every push
    for node in cluster.ids:
        values = Counter(cluster.views[node].queues["q"].elements())
        assert sorted(values) == list(range(pushed)) and set(values.values()) == {1}


def test_without_the_pause_the_transfer_is_refused_under_steady_writes(tmp_path: Path) -> None:
    with patches.disabled("paused-transfer"):
        cluster, leader, _, answers = _writes_during_a_transfer(tmp_path / "off", rounds=50)
    assert answers == [Outcome.REQUEST_DENIED]
    assert cluster.replicas[leader].engine.is_leader


def test_a_transfer_to_a_member_that_cannot_catch_up_is_given_up(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    target = next(n for n in cluster.ids if n != leader)
    engine = cluster.replicas[leader].engine
    answers: list[Outcome] = []
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "before"])
    cluster.step(leader)  # appended; the target never hears of it
    engine.transfer_leadership(target, lambda _r, outcome: answers.append(outcome))
    assert engine.transfer.pending and answers == []
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "held"])
    silent = 0.0
    while engine.transfer.pending:  # the target's messages are lost
        cluster.now += TICK
        silent += TICK
        cluster.round(keep=lambda item: target in item[:2])
        cluster.in_flight = [m for m in cluster.in_flight if target not in m[:2]]
    assert answers == [Outcome.REQUEST_DENIED]
    assert silent <= engine.transfer.patience + 2 * TICK
    assert engine.is_leader and engine.transfer.abandoned == 1
    engine.transfer_leadership(target, lambda _r, outcome: answers.append(outcome))
    assert not engine.transfer.pending  # a retry right away leaves room for writes
    assert answers == [Outcome.REQUEST_DENIED] * 2
    for _ in range(100):
        cluster.now += TICK
        cluster.round()
    assert cluster.views[leader].queues["q"].elements() == ["before", "held"]
    assert all(error is None for _, error in cluster.results)


def test_a_transfer_to_a_member_that_is_not_linked_is_refused_at_once(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    target = next(n for n in cluster.ids if n != leader)
    cluster.replicas[leader].peer_connected(target, False)
    engine = cluster.replicas[leader].engine
    answers: list[Outcome] = []
    engine.transfer_leadership(target, lambda _r, outcome: answers.append(outcome))
    assert answers == [Outcome.REQUEST_DENIED] and not engine.transfer.pending

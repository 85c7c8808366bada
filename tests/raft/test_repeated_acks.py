"""A follower leaves out an acknowledgement that repeats the one it just sent its leader
(:mod:`lazily_queue.raft.acks`): a commit index published on its own costs no answer,
and the leader still hears from it at least once per heartbeat and window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lazily_queue.raft.acks import WINDOW_OF_HEARTBEAT, RepeatedAcks
from lazily_queue.replicated import ops as C

from .harness import Manual


def _acks(cluster: Manual, since: int, src: str) -> list[dict[str, Any]]:
    return [m for s, _, m in cluster.sent[since:]
            if s == src and m["type"] == "next_node_idx"]


def _committed_push(cluster: Manual, leader: str, followers: list[str], value: str) -> None:
    """A push appended, acknowledged and committed; the leader publishes the commit index
    on its own (nothing else was proposed), and it is delivered."""
    cluster.propose(leader, C.QUEUE_PUSH, ["q", value])
    cluster.step(leader)
    cluster.deliver()
    for node in followers:
        cluster.step(node)
    cluster.deliver()
    cluster.step(leader)  # commits, then publishes the commit index
    assert not cluster.replicas[leader].commit_unsent
    cluster.deliver()


def _after_a_commit(tmp_path: Path) -> tuple[Manual, str, list[str]]:
    """Three members, a queue declared and a push committed; the leader's commit index
    published on its own and delivered."""
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    followers = [n for n in cluster.ids if n != leader]
    _committed_push(cluster, leader, followers, "a")
    return cluster, leader, followers


def test_the_answer_to_a_commit_published_on_its_own_is_left_out(tmp_path: Path) -> None:
    cluster, leader, followers = _after_a_commit(tmp_path)
    mark = len(cluster.sent)
    for node in followers:
        cluster.step(node)
    commit = cluster.replicas[leader].engine.commit_index
    for node in followers:
        assert cluster.replicas[node].engine.last_applied == commit
        assert _acks(cluster, mark, node) == []
        assert cluster.replicas[node].engine.acks.left_out >= 1


def test_a_follower_still_answers_once_per_window(tmp_path: Path) -> None:
    cluster, leader, followers = _after_a_commit(tmp_path)
    for node in followers:
        cluster.step(node)
    engine = cluster.replicas[leader].engine
    cluster.now += cluster.config.engine.heartbeat_interval + 0.001  # a heartbeat is due
    mark = len(cluster.sent)
    cluster.step(leader)
    cluster.deliver()
    for node in followers:
        cluster.step(node)
        (ack,) = _acks(cluster, mark, node)
        assert ack["success"] and ack["next_node_idx"] == engine.commit_index + 1
    # and a new entry is always acknowledged, however soon
    _committed_push(cluster, leader, followers, "b")
    assert engine.commit_index == cluster.replicas[leader].journal.last_index


def _success(index: int) -> dict[str, Any]:
    return {"type": "next_node_idx", "next_node_idx": index, "reset": False, "success": True}


def test_only_a_recent_same_success_for_committed_entries_is_left_out() -> None:
    now, term, committed = [0.0], [3], [4]
    acks = RepeatedAcks(lambda: now[0], lambda: term[0], lambda: committed[0],
                        heartbeat_interval=0.1)
    assert acks.window == 0.1 * WINDOW_OF_HEARTBEAT
    assert acks.wanted("1", _success(5))
    assert not acks.wanted("1", _success(5))
    assert acks.wanted("2", _success(5))  # another leader
    assert acks.wanted("1", _success(6))  # news
    committed[0] = 4
    assert acks.wanted("1", _success(6))  # entry 5 is not committed: the first may be lost
    committed[0] = 5
    failure = {"type": "next_node_idx", "next_node_idx": 6, "reset": True, "success": False}
    assert acks.wanted("1", failure)
    assert acks.wanted("1", _success(6))  # after a failure, a success is news again
    term[0] = 4
    assert acks.wanted("1", _success(6))
    now[0] = acks.window
    assert acks.wanted("1", _success(6))  # the window passed
    acks.forget("1")
    assert acks.wanted("1", _success(6))  # the link went down or up
    assert acks.left_out == 1


def test_a_lost_answer_is_repeated_until_the_leader_commits(tmp_path: Path) -> None:
    """The answer for ``b`` is lost and the one for ``a`` late: the commit index the
    leader then publishes (``a``'s) is answered again, though within the window, and
    ``b`` commits without waiting for a heartbeat (the clock does not move here)."""
    cluster = Manual(tmp_path, ("1", "2"))
    leader = cluster.elect()
    follower = "2" if leader == "1" else "1"
    cluster.declare_queue(leader)
    answers = []
    for value in ("a", "b"):
        cluster.propose(leader, C.QUEUE_PUSH, ["q", value])
        cluster.step(leader)
        cluster.deliver()
        cluster.step(follower)
        answers.append(cluster.in_flight)
        cluster.in_flight = []
    cluster.in_flight = answers[0]  # a's answer arrives late, b's never
    for _ in range(5):
        cluster.round()
    engine = cluster.replicas[leader].engine
    assert engine.commit_index == cluster.replicas[leader].journal.last_index

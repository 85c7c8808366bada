"""A step in two halves (prepare, then tick) and the engine's command queue."""

from __future__ import annotations

import queue
from pathlib import Path

import pytest
from pysyncobj.node import Node

from lazily_queue.raft.adapters import CommandQueue, RaftPeer
from lazily_queue.replicated import ops as C

from .harness import Manual


def test_a_leader_tick_after_the_fsync_of_prepare_commits_what_it_appended(
    tmp_path: Path,
) -> None:
    """The split step: prepare appends, the journal is made durable, the tick commits.
    Without that fsync the tick commits nothing (the leader's own copy is not durable)."""
    cluster = Manual(tmp_path, ("1",))
    cluster.elect()
    cluster.declare_queue("1")
    replica = cluster.replicas["1"]
    results: list[object] = []
    replica.propose(C.QUEUE_PUSH, ["q", "x"], timeout=5,
                    on_done=lambda result, error: results.append(result))
    first = replica.prepare()
    assert replica.journal.last_index > replica.engine.commit_index
    assert replica.journal.write()
    unsynced = replica.tick()
    assert not first.completions and not unsynced.completions
    replica.journal.fsync()
    assert replica.prepare().completions == []
    done = replica.tick().completions
    assert len(done) == 1 and replica.engine.commit_index == replica.journal.last_index


def test_the_command_queue_keeps_order_and_its_limit() -> None:
    library: queue.Queue[int] = queue.Queue()
    library.put(1)
    commands = CommandQueue(3, library)  # takes over what the library queued meanwhile
    commands.put_nowait(2)
    commands.put_nowait(3)
    with pytest.raises(queue.Full):
        commands.put_nowait(4)
    assert len(commands) == 3
    assert [commands.get_nowait() for _ in range(3)] == [1, 2, 3]
    with pytest.raises(queue.Empty):
        commands.get_nowait()
    assert not commands


def test_an_unbounded_command_queue_takes_any_number() -> None:
    commands = CommandQueue(0, queue.Queue())
    for i in range(1000):
        commands.put_nowait(i)
    assert len(commands) == 1000


def test_a_member_equals_hashes_and_shows_as_the_library_node_of_its_id() -> None:
    member, node = RaftPeer(2), Node("2")
    assert member == RaftPeer("2") == node and node == member and member != RaftPeer("3")
    assert not member != RaftPeer("2") and not member != node
    assert hash(member) == hash(node) and {member: 1}[node] == {node: 1}[member] == 1
    assert member != "2" and "2" != member and member.id == "2"
    assert repr(member) == "RaftPeer('2')" and str(member) == f"{member}" == "2"
    assert type(str(member)) is str

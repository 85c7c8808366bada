"""When a leader sends AppendEntries: once per step for all it appended, and a new commit
index either with the next append or when the driver publishes it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lazily_queue import testing
from lazily_queue.raft.codec import decode_frame, encode_frames
from lazily_queue.raft.ready import Ready
from lazily_queue.raft.release import Release
from lazily_queue.replicated import ops as C

from .harness import Manual


def _appends(ready: Ready, peer: str) -> list[dict[str, Any]]:
    return [m for m in ready.messages.get(peer, []) if m["type"] == "append_entries"]


def _send(cluster: Manual, src: str, ready: Ready) -> None:
    for peer, messages in ready.messages.items():
        for frame in encode_frames(messages):
            for message in decode_frame(frame):
                cluster.in_flight.append((src, peer, message))


def test_one_append_per_follower_carries_every_command_a_step_appended(
    tmp_path: Path,
) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    followers = [n for n in cluster.ids if n != leader]
    for node in followers:  # forwarded to the leader as commands of their own
        cluster.propose(node, C.QUEUE_PUSH, ["q", f"from {node}"])
        cluster.step(node)
    cluster.deliver()
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "from the leader"])
    before = cluster.replicas[leader].journal.last_index
    ready = cluster.replicas[leader].step()
    assert cluster.replicas[leader].journal.last_index == before + 3
    for peer in followers:
        appends = _appends(ready, peer)
        assert len(appends) == 1
        assert [e[1] for e in appends[0]["entries"]] == [before + 1, before + 2, before + 3]


def test_a_new_commit_index_rides_on_the_next_append_or_is_published(
    tmp_path: Path,
) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    replica = cluster.replicas[leader]
    followers = [n for n in cluster.ids if n != leader]

    def acknowledged(ready: Ready) -> Ready:
        """Deliver the leader's appends, the followers' acknowledgements, step the leader."""
        _send(cluster, leader, ready)
        cluster.deliver()
        for node in followers:
            cluster.step(node)
        cluster.deliver()
        return replica.step()

    cluster.propose(leader, C.QUEUE_PUSH, ["q", "a"])
    committing = acknowledged(replica.step())
    assert replica.engine.commit_index == replica.journal.last_index
    assert all(_appends(committing, peer) == [] for peer in followers)
    assert replica.commit_unsent
    # The next proposal's append carries the commit index: nothing left to publish.
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "b"])
    ready = replica.step()
    assert not replica.commit_unsent
    for peer in followers:
        (append,) = _appends(ready, peer)
        assert append["commit_index"] == replica.engine.commit_index
    # With nothing proposed, publishing sends the commit index on its own.
    acknowledged(ready)
    assert replica.commit_unsent
    published = replica.publish_commit()
    assert not replica.commit_unsent
    for peer in followers:
        (append,) = _appends(published, peer)
        assert append["commit_index"] == replica.engine.commit_index
    assert _appends(replica.publish_commit(), followers[0]) == []  # nothing new to say
    _send(cluster, leader, published)
    cluster.deliver()
    for node in followers:
        cluster.step(node)
        assert cluster.replicas[node].engine.last_applied == replica.engine.commit_index


async def _until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for ``predicate`` (a hang detector, not a timing bound)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


async def test_followers_learn_a_commit_without_a_heartbeat_or_another_push(
    tmp_path: Path,
) -> None:
    """With every timer and heartbeat silenced, a push's commit still reaches the
    followers (the driver publishes it), so they apply it and a follower's own push,
    which completes only once applied there, completes too."""
    async with testing.cluster(3, data_dir=tmp_path, maintenance_interval=None) as c:
        leader = await c.leader()
        await leader.queue("q").push("a")
        await c.settle()
        loop = asyncio.get_running_loop()
        for node in c.running:
            driver = node.driver
            driver.tick_interval = 3600.0
            await _until(lambda d=driver: d._timer is not None  # type: ignore[misc]
                         and d._timer.when() > loop.time() + 60)
        leader.driver.replica.engine._SyncObj__conf.appendEntriesPeriod = 3600.0
        followers = [n for n in c.running if n is not leader]
        await leader.queue("q").push("b")
        await _until(lambda: all(f.view.queue("q").elements() == ["a", "b"]  # type: ignore[union-attr]
                                 for f in followers))
        await asyncio.wait_for(followers[0].queue("q").push("c"), 10)
        await _until(lambda: all(n.view.queue("q").elements() == ["a", "b", "c"]  # type: ignore[union-attr]
                                 for n in c.running))


class _Network:
    def __init__(self) -> None:
        self.frames: list[tuple[str, bytes]] = []

    def send(self, peer: str, frame: bytes) -> None:
        self.frames.append((peer, frame))


def test_equal_messages_to_several_peers_go_as_the_frames_each_would_be_given() -> None:
    """A leader's appends to followers in step are encoded once; any peer's frames are
    those of its own messages."""
    release = Release()
    network = _Network()
    release.network = network  # type: ignore[assignment]
    release._unaddressed, release._state_waiters = set(), []
    append = {"type": "append_entries", "term": 2, "commit_index": 5, "entries": [(b"x", 6, 2)],
              "prevLogIdx": 5, "prevLogTerm": 2}
    messages = {"2": [append], "3": [dict(append)], "4": [dict(append, commit_index=4)],
                "5": [dict(append)], "6": [dict(append), dict(append, entries=[])]}
    release._dispatch(Ready(messages={peer: list(m) for peer, m in messages.items()}))
    assert network.frames == [(peer, frame) for peer, sent in messages.items()
                              for frame in encode_frames(sent)]

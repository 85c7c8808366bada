"""The log is compacted by its size in bytes, not only by its entry count or age."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.replicated import ops as C

from .harness import Manual

PAYLOAD = b"x" * 2000


def _cluster(root: Path, log_bytes: int) -> Manual:
    # Entry count and age never trigger a compaction here: only the bytes can.
    engine = EngineConfig(compaction_min_entries=100_000, compaction_min_time=3600,
                          compaction_log_bytes=log_bytes)
    return Manual(root, config=ReplicaConfig(engine=engine))


def _push(cluster: Manual, leader: str, count: int, *, pop: bool) -> int:
    """Push (and pop) ``count`` payloads one batch per round; the largest log seen."""
    largest = 0
    for _ in range(count):
        cluster.propose(leader, C.QUEUE_PUSH, ["q", PAYLOAD])
        if pop:
            cluster.propose(leader, C.QUEUE_POP, ["q"])
        for _ in range(3):
            cluster.round()
        largest = max(largest, *(r.journal.size_bytes for r in cluster.replicas.values()))
    return largest


def test_sustained_traffic_keeps_every_members_log_under_the_byte_limit(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path, 64 * 1024)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    largest = _push(cluster, leader, 300, pop=True)  # about 600 kB through the log
    assert all(error is None for _, error in cluster.results)
    for replica in cluster.replicas.values():
        assert replica.snapshots.taken >= 5
        assert replica.journal.first_index > 1
        assert replica.journal.size_bytes < 64 * 1024
    assert largest < 64 * 1024 + 3 * len(PAYLOAD)
    assert cluster.views[leader].queues["q"].len() == 0


def test_a_state_larger_than_the_limit_is_not_snapshotted_for_every_few_entries(
    tmp_path: Path,
) -> None:
    cluster = _cluster(tmp_path, 16 * 1024)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    _push(cluster, leader, 200, pop=False)  # the state grows to about 400 kB
    replica = cluster.replicas[leader]
    # At 16 kB a compaction would come every 8 pushes (25 in all); waiting until the
    # log is as large as the last snapshot keeps the written bytes within twice the log.
    assert 3 <= replica.snapshots.taken <= 8
    assert replica.journal.size_bytes <= max(16 * 1024, replica.snapshots.size) + len(PAYLOAD)


def test_the_limit_must_be_positive() -> None:
    with pytest.raises(ValueError, match="compaction_log_bytes"):
        EngineConfig(compaction_log_bytes=0)

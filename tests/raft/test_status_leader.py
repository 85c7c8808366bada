"""The status names a leader only while this member hears from it."""

from __future__ import annotations

from pathlib import Path

from .harness import Manual
from .test_prevote import _advance


def test_a_survivor_of_a_lost_majority_names_no_leader(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    survivor, other = (n for n in cluster.ids if n != leader)
    _advance(cluster, 1.0)
    assert cluster.replicas[survivor].status()["leader"] == leader
    _advance(cluster, 1.0, down=frozenset({leader, other}))  # within two fallback timeouts
    assert cluster.replicas[survivor].status()["leader"] == leader
    _advance(cluster, 2.0, down=frozenset({leader, other}))
    status = cluster.replicas[survivor].status()
    assert status["leader"] is None and status["state"] == "follower"
    assert cluster.replicas[survivor].engine.leader_id == leader  # still where it forwards
    _advance(cluster, 2.0)  # the others are back: a leader is heard again
    leader = cluster.replicas[survivor].engine.leader_id
    assert leader is not None and cluster.replicas[survivor].status()["leader"] == leader

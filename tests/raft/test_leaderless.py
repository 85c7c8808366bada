"""A member cut silently from the majority (its links up, nothing arriving) says it has
heard from no leader once two election timeouts (or leader fallback timeouts, the
longer: 2 s here) have passed without one (:meth:`Replica.leaderless`), which a client's
ping is answered with; the members of the majority, which elect or keep a leader, do
not, nor does the cut member once healed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.raft.harness import Manual

#: Seconds of virtual time per round.
TICK = 0.05


def _run(cluster: Manual, seconds: float, cut: str | None) -> None:
    """Rounds for ``seconds``, dropping every message to or from ``cut``."""
    for _ in range(round(seconds / TICK)):
        cluster.now += TICK
        cluster.step_all()
        cluster.in_flight = [m for m in cluster.in_flight if cut not in (m[0], m[1])]
        cluster.deliver()


@pytest.mark.parametrize("who", ["follower", "leader"])
def test_a_member_cut_from_the_majority_says_it_has_no_leader(tmp_path: Path,
                                                             who: str) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    _run(cluster, 3.0, None)
    assert all(r.leaderless() is None for r in cluster.replicas.values())
    cut = leader if who == "leader" else next(n for n in cluster.ids if n != leader)
    others = [n for n in cluster.ids if n != cut]

    _run(cluster, 1.0, cut)  # within the window (a leader steps down after 1 s)
    assert cluster.replicas[cut].leaderless() is None

    _run(cluster, 3.0, cut)
    said = cluster.replicas[cut].leaderless()
    assert said is not None and f"node {cut} has heard from no leader for 2 s" in said
    assert [cluster.replicas[n].leaderless() for n in others] == [None, None]
    assert any(cluster.replicas[n].engine.is_leader for n in others)

    _run(cluster, 2.0, None)  # healed: the leader's AppendEntries reach it again
    assert cluster.replicas[cut].leaderless() is None

"""Pre-vote: a member that cannot win an election does not raise its term."""

from __future__ import annotations

from pathlib import Path

from lazily_queue.raft import patches
from lazily_queue.raft.engine import CANDIDATE, LEADER
from lazily_queue.raft.outcome import Outcome
from lazily_queue.replicated import ops as C

from .harness import Manual, Message, wiped_member

TICK = 0.02


def _advance(
    cluster: Manual,
    seconds: float,
    *,
    cut: frozenset[str] = frozenset(),
    down: frozenset[str] = frozenset(),
    drop: tuple[str, str] | None = None,
) -> None:
    """Run ``seconds`` of ticks. Messages to or from ``cut`` and ``down`` members are lost
    (their links still look up: a silent partition); ``down`` members do not run;
    ``drop`` = (sender, type) loses that sender's messages of that type."""

    def lost(item: Message) -> bool:
        src, dst, message = item
        if {src, dst} & (cut | down):
            return True
        return drop is not None and (src, message["type"]) == drop

    for _ in range(round(seconds / TICK)):
        cluster.now += TICK
        for node in cluster.ids:
            if node not in down:
                cluster.step(node)
        cluster.in_flight = [item for item in cluster.in_flight if not lost(item)]
        cluster.deliver()


def _push(cluster: Manual, leader: str, values: range) -> None:
    for value in values:
        cluster.propose(leader, C.QUEUE_PUSH, ["q", value])


def _sent(cluster: Manual, src: str, kind: str) -> list[dict[str, object]]:
    return [m for s, _, m in cluster.sent if s == src and m["type"] == kind]


def _isolated_follower(root: Path) -> dict[str, object]:
    """Cut a follower off for 3 s (about ten election timeouts) while the leader commits,
    then reconnect it for 3 s."""
    cluster = Manual(root)
    leader = cluster.elect()
    follower = next(n for n in cluster.ids if n != leader)
    cluster.declare_queue(leader)
    engine = cluster.replicas[leader].engine
    term, changes = engine.term, cluster.replicas[leader].leader_changes
    _push(cluster, leader, range(10))
    _advance(cluster, 3.0, cut=frozenset({follower}))
    isolated_term = cluster.replicas[follower].engine.term
    _push(cluster, leader, range(10, 20))
    _advance(cluster, 3.0)
    leaders = [n for n, r in cluster.replicas.items() if r.engine.is_leader]
    return {
        "term": term,
        "isolated_term": isolated_term,
        "final_term": max(r.engine.term for r in cluster.replicas.values()),
        "deposed": cluster.replicas[leader].leader_changes != changes,
        "same_leader": leaders == [leader],
        "caught_up": cluster.views[follower].queues["q"].len(),
    }


def test_a_reconnected_follower_does_not_depose_the_leader(tmp_path: Path) -> None:
    ours = _isolated_follower(tmp_path / "ours")
    assert ours["isolated_term"] == ours["term"]
    assert ours["final_term"] == ours["term"]
    assert not ours["deposed"] and ours["same_leader"]
    assert ours["caught_up"] == 20
    with patches.disabled("pre-vote"):
        stock = _isolated_follower(tmp_path / "stock")
    # Without pre-vote the cut-off follower raises its term on every timeout, and its
    # higher term deposes the leader when it comes back.
    assert stock["isolated_term"] > stock["term"] + 3  # type: ignore[operator]
    assert stock["final_term"] > stock["term"]  # type: ignore[operator]
    assert stock["deposed"]
    assert stock["caught_up"] == 20


def test_a_new_leader_after_the_leader_dies_and_after_a_full_restart(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    term = cluster.replicas[leader].engine.term
    _push(cluster, leader, range(5))
    _advance(cluster, 0.2)
    _advance(cluster, 2.0, down=frozenset({leader}))
    survivors = [n for n in cluster.ids if n != leader]
    elected = [n for n in survivors if cluster.replicas[n].engine.is_leader]
    assert len(elected) == 1
    assert cluster.replicas[elected[0]].engine.term > term
    assert all(_sent(cluster, n, "pre_vote") for n in elected)
    cluster.restart_all()  # every member restarts from its journal
    restarted = cluster.elect()
    cluster.propose(restarted, C.QUEUE_PUSH, ["q", "after"])
    _advance(cluster, 0.2)
    assert all(v.queues["q"].len() == 6 for v in cluster.views.values())


def test_a_one_member_cluster_elects_itself(tmp_path: Path) -> None:
    cluster = Manual(tmp_path, ("1",))
    assert cluster.elect() == "1"
    assert cluster.replicas["1"].engine.term == 1
    cluster.declare_queue("1")
    cluster.propose("1", C.QUEUE_PUSH, ["q", 1])
    _advance(cluster, 0.1)
    assert cluster.views["1"].queues["q"].len() == 1
    assert not _sent(cluster, "1", "pre_vote")


def test_leadership_transfer_skips_pre_vote(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    term = cluster.replicas[leader].engine.term
    target = next(n for n in cluster.ids if n != leader)
    results: list[Outcome] = []
    cluster.replicas[leader].engine.transfer_leadership(target, lambda _r, e: results.append(e))
    assert results == [Outcome.SUCCESS]
    mark = len(cluster.sent)
    _advance(cluster, 0.1)
    assert cluster.replicas[target].engine.is_leader
    assert cluster.replicas[target].engine.term == term + 1
    # The third member heard from the old leader a moment ago: it would refuse a
    # pre-vote, so the transfer must not ask for one.
    assert not [m for _, _, m in cluster.sent[mark:] if m["type"] == "pre_vote"]
    assert cluster.replicas[target].engine.pre_vote.transfer_elections == 1


def test_a_member_with_a_stale_log_cannot_win_pre_vote(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    stale, fresh = (n for n in cluster.ids if n != leader)
    _push(cluster, leader, range(10))
    _advance(cluster, 1.0, cut=frozenset({stale}))
    term = cluster.replicas[stale].engine.term
    before = len(cluster.sent)
    # The leader dies; the fresh member's pre-votes are lost, so only the stale one runs.
    _advance(cluster, 3.0, down=frozenset({leader}), drop=(fresh, "pre_vote"))
    engine = cluster.replicas[stale].engine
    assert engine.term == term and engine.state != CANDIDATE
    assert engine.pre_vote.rounds >= 3
    answers = [m for s, d, m in cluster.sent[before:]
               if s == fresh and d == stale and m["type"] == "pre_vote_response"]
    assert len(answers) >= 3 and not any(m["granted"] for m in answers)
    _advance(cluster, 2.0, down=frozenset({leader}))
    assert cluster.replicas[fresh].engine.is_leader
    assert cluster.replicas[fresh].engine.term == term + 1
    assert cluster.views[stale].queues["q"].len() == 10


def test_a_follower_of_a_live_leader_refuses_and_a_grant_changes_nothing(
    tmp_path: Path,
) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    follower, other = (n for n in cluster.ids if n != leader)
    engine = cluster.replicas[follower].engine
    term, last = engine.term, cluster.replicas[follower].journal.last_index
    vote = engine._SyncObj__votedForNodeId
    ask = {"type": "pre_vote", "term": term + 1, "last_log_index": last + 5,
           "last_log_term": term}

    def answer(node: str) -> dict[str, object]:
        cluster.replicas[node].receive(other, dict(ask))
        sent = cluster.replicas[node].step().messages[other]
        return next(m for m in sent if m["type"] == "pre_vote_response")

    assert answer(follower) == {"type": "pre_vote_response", "term": term, "granted": False}
    assert answer(leader)["granted"] is False
    cluster.now += 0.31  # the leader has been silent for longer than election_timeout_min
    assert answer(follower) == {"type": "pre_vote_response", "term": term + 1, "granted": True}
    assert engine.term == term and engine._SyncObj__votedForNodeId == vote
    ask["last_log_index"] = last - 1  # a shorter log
    assert answer(follower)["granted"] is False


def test_each_granter_counts_once_and_stale_grants_are_ignored(tmp_path: Path) -> None:
    cluster = Manual(tmp_path, ("1", "2", "3", "4", "5"))
    replica = cluster.replicas["1"]
    cluster.now = 5.0
    sent = replica.step().messages  # the deadline passed: a round for term 1
    assert sorted(sent) == ["2", "3", "4", "5"]
    assert [m for ms in sent.values() for m in ms if m["type"] == "pre_vote"] == [
        {"type": "pre_vote", "term": 1, "last_log_index": 1, "last_log_term": 0}] * 4
    grant = {"type": "pre_vote_response", "term": 1, "granted": True}
    replica.receive("2", grant)
    replica.receive("2", grant)
    replica.receive("3", dict(grant, term=2))  # not this round's term
    replica.step()
    assert replica.engine.term == 0 and replica.engine.state != CANDIDATE
    replica.receive("3", grant)
    replica.step()
    assert replica.engine.term == 1 and replica.engine.state == CANDIDATE


def test_a_member_with_a_higher_term_is_not_left_out(tmp_path: Path) -> None:
    """A member that raised its term without pre-vote (before an upgrade) can win no
    round against a live leader; the leader learns its term and steps down."""
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    behind = next(n for n in cluster.ids if n != leader)
    with patches.disabled("pre-vote"):
        _advance(cluster, 2.0, cut=frozenset({behind}))
    high = cluster.replicas[behind].engine.term
    assert high > cluster.replicas[leader].engine.term + 2
    _push(cluster, leader, range(5))
    _advance(cluster, 4.0)
    terms = {r.engine.term for r in cluster.replicas.values()}
    assert len(terms) == 1 and terms.pop() > high
    assert sum(r.engine.state == LEADER for r in cluster.replicas.values()) == 1
    assert cluster.views[behind].queues["q"].len() == 5


def test_a_rejoining_member_keeps_its_restrictions(tmp_path: Path) -> None:
    wiped_member(tmp_path)
    cluster = Manual(tmp_path)
    replica = cluster.replicas["1"]
    assert replica.engine.rejoining
    below = {"type": "pre_vote", "term": 3, "last_log_index": 3, "last_log_term": 2}
    replica.receive("2", below)
    assert "2" not in replica.step().messages  # a candidate below the floor gets no answer
    replica.receive("3", dict(below, last_log_index=4))
    assert {"type": "pre_vote_response", "term": 3, "granted": True} in \
        replica.step().messages["3"]
    cluster.now = 5.0
    replica.step()  # its own round ...
    for peer in ("2", "3"):
        replica.receive(peer, {"type": "pre_vote_response", "term": 3, "granted": True})
    cluster.now += TICK
    replica.step()
    assert replica.engine.term == 2 and replica.engine.state != CANDIDATE  # ... never wins

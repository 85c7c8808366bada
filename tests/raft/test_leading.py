"""A leader, alone or not: proposals go straight to its log, and its ticks commit what a
majority holds durably without a full engine tick, which still runs once per heartbeat
period (and whenever a snapshot or compaction waits for one); so do followers, which only
apply what is committed in between (and tick fully as soon as an election is due)."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lazily_queue.raft.replica import Replica
from lazily_queue.replicated import ops as C

from .harness import Manual


def _count_full_ticks(replica: Replica) -> list[int]:
    ticks: list[int] = []
    engine: Any = replica.engine
    full = engine._onTick

    def counted(timeout: float = 0.0) -> None:
        ticks.append(1)
        full(timeout)

    engine._onTick = counted
    return ticks


def _push(replica: Replica, value: str, results: list[object]) -> None:
    replica.propose(C.QUEUE_PUSH, ["q", value], timeout=5,
                    on_done=lambda result, error: results.append(error or result))


def _lone(tmp_path: Path) -> tuple[Manual, Replica]:
    cluster = Manual(tmp_path, ("1",))
    cluster.elect()
    cluster.declare_queue("1")
    return cluster, cluster.replicas["1"]


def test_a_lone_leader_appends_at_once_and_commits_only_what_is_durable(
    tmp_path: Path,
) -> None:
    cluster, replica = _lone(tmp_path)
    replica.tick()  # a full tick now: the next ones within a heartbeat period are light
    ticks = _count_full_ticks(replica)
    results: list[object] = []
    _push(replica, "x", results)
    last = replica.journal.last_index
    assert replica.prepare().completions == []
    assert replica.journal.last_index == last + 1  # appended in prepare, no queue left
    assert not replica.engine._commands
    assert replica.journal.write()
    assert replica.tick().completions == []  # written, not durable: nothing commits
    assert replica.engine.commit_index == last
    replica.journal.fsync()
    done = replica.tick().completions
    assert len(done) == 1 and replica.engine.commit_index == last + 1
    assert ticks == []  # neither tick was a full one
    cluster.now += 0.001
    _push(replica, "y", results)
    replica.prepare()
    replica.journal.write()
    replica.journal.fsync()
    assert len(replica.tick().completions) == 1
    assert ticks == []  # committed and applied without a full tick
    assert cluster.views["1"].queue("q").elements() == ["x", "y"]


def test_a_lone_leader_still_ticks_fully_once_per_heartbeat_period(tmp_path: Path) -> None:
    cluster, replica = _lone(tmp_path)
    ticks = _count_full_ticks(replica)
    heartbeat = replica.config.engine.heartbeat_interval
    results: list[object] = []
    committed = 0
    for i in range(200):  # one push every millisecond, each committed by its own tick
        cluster.now += 0.001
        _push(replica, str(i), results)
        replica.prepare()
        replica.journal.write()
        replica.journal.fsync()
        committed += len(replica.tick().completions)
    assert committed == 200
    # Timers, compaction and elections still run, once per heartbeat period.
    assert int(0.2 / heartbeat) - 1 <= len(ticks) <= int(0.2 / heartbeat) + 1


def test_a_lone_leader_keeps_queued_commands_ahead_of_new_proposals(tmp_path: Path) -> None:
    _cluster, replica = _lone(tmp_path)
    engine: Any = replica.engine
    engine._commands.put_nowait((b"\x01", None))  # a queued no-op
    results: list[object] = []
    _push(replica, "x", results)
    last = replica.journal.last_index
    replica.prepare()
    entries = replica.journal[last:]
    assert [e[1] for e in entries] == [last + 1, last + 2]
    assert entries[0][0][:1] == b"\x01"  # the queued command first, the push after it


def _followers_answer(cluster: Manual, leader: str, appends: dict[str, list[Any]],
                      followers: list[str]) -> None:
    """``followers`` take the leader's appends, write and fsync them and answer."""
    replica = cluster.replicas[leader]
    for follower in followers:
        member = cluster.replicas[follower]
        for message in appends[follower]:
            member.receive(leader, message)
        ready = member.prepare()
        assert member.journal.write()
        member.journal.fsync()
        for message in ready.messages[leader]:
            replica.receive(follower, message)


def _leading(tmp_path: Path) -> tuple[Manual, str, list[str], list[int]]:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    cluster.replicas[leader].tick()  # a full tick now: the next ones are light
    followers = [n for n in cluster.ids if n != leader]
    return cluster, leader, followers, _count_full_ticks(cluster.replicas[leader])


def test_a_leader_commits_in_the_tick_after_a_followers_reply_without_a_full_tick(
    tmp_path: Path,
) -> None:
    cluster, leader, followers, ticks = _leading(tmp_path)
    replica = cluster.replicas[leader]
    results: list[object] = []
    _push(replica, "x", results)
    last = replica.journal.last_index
    appends = replica.prepare().messages  # appended and sent at once, one append each
    assert sorted(appends) == followers
    assert all(len(m) == 1 and m[0]["type"] == "append_entries" for m in appends.values())
    assert replica.journal.last_index == last + 1
    assert replica.journal.write()
    replica.journal.fsync()
    assert replica.tick().completions == []  # only its own copy is durable
    _followers_answer(cluster, leader, appends, followers[:1])
    done = replica.tick().completions
    assert len(done) == 1 and replica.engine.commit_index == last + 1
    assert ticks == []
    assert cluster.views[leader].queue("q").elements() == ["x"]


def test_a_leaders_light_tick_counts_only_durable_copies(tmp_path: Path) -> None:
    cluster, leader, followers, ticks = _leading(tmp_path)
    replica = cluster.replicas[leader]
    results: list[object] = []
    _push(replica, "x", results)
    last = replica.journal.last_index
    appends = replica.prepare().messages
    assert replica.journal.write()  # written, never fsynced here
    _followers_answer(cluster, leader, appends, followers[:1])
    assert replica.tick().completions == []  # its own copy is not durable: one of three
    assert replica.engine.commit_index == last
    _followers_answer(cluster, leader, appends, followers[1:])
    assert len(replica.tick().completions) == 1  # two followers' durable copies
    assert replica.engine.commit_index == last + 1
    assert ticks == []


def test_a_leader_with_peers_still_ticks_fully_once_per_heartbeat_period(
    tmp_path: Path,
) -> None:
    cluster, leader, _followers, ticks = _leading(tmp_path)
    replica = cluster.replicas[leader]
    heartbeat = replica.config.engine.heartbeat_interval
    for _ in range(200):
        cluster.now += 0.001
        replica.tick()
    assert int(0.2 / heartbeat) - 1 <= len(ticks) <= int(0.2 / heartbeat) + 1


def _following(tmp_path: Path) -> tuple[Manual, str, str, list[int]]:
    cluster, leader, followers, _ = _leading(tmp_path)
    cluster.replicas[followers[0]].tick()  # a full tick now: the next ones are light
    return cluster, leader, followers[0], _count_full_ticks(cluster.replicas[followers[0]])


def test_a_follower_applies_what_is_committed_without_a_full_tick(tmp_path: Path) -> None:
    cluster, leader, follower, ticks = _following(tmp_path)
    replica = cluster.replicas[leader]
    _push(replica, "x", [])
    appends = replica.prepare().messages
    assert replica.journal.write()
    replica.journal.fsync()
    _followers_answer(cluster, leader, appends, [n for n in cluster.ids if n != leader])
    assert len(replica.tick().completions) == 1
    for message in replica.publish_commit().messages[follower]:
        cluster.replicas[follower].receive(leader, message)
    cluster.now += 0.001
    cluster.replicas[follower].tick()
    assert ticks == []
    assert cluster.views[follower].queue("q").elements() == ["x"]


def test_a_follower_still_ticks_fully_once_per_heartbeat_period(tmp_path: Path) -> None:
    cluster, _leader, follower, ticks = _following(tmp_path)
    replica = cluster.replicas[follower]
    heartbeat = replica.config.engine.heartbeat_interval
    for _ in range(200):  # within the election timeout: no election falls due
        cluster.now += 0.001
        replica.tick()
    assert int(0.2 / heartbeat) - 1 <= len(ticks) <= int(0.2 / heartbeat) + 1


def test_a_follower_ticks_fully_as_soon_as_its_election_deadline_passes(
    tmp_path: Path,
) -> None:
    cluster, _leader, follower, ticks = _following(tmp_path)
    replica = cluster.replicas[follower]
    engine: Any = replica.engine
    cluster.now = engine._SyncObj__raftElectionDeadline + 0.001
    engine._full_tick_at = cluster.now - 0.001  # though the last full tick is recent
    rounds = [m for m in replica.tick().messages.values()
              if any(x["type"] == "pre_vote" for x in m)]
    assert ticks == [1] and len(rounds) == 2


def test_a_follower_ticks_fully_while_a_command_waits_to_be_forwarded(tmp_path: Path) -> None:
    cluster, leader, follower, ticks = _following(tmp_path)
    replica = cluster.replicas[follower]
    replica.engine._commands.put_nowait((b"\x01", None))  # a queued no-op
    cluster.now += 0.001
    sent = replica.tick().messages
    assert ticks == [1]
    assert [m["type"] for m in sent[leader]] == ["apply_command"]


def test_a_leader_ticks_fully_while_a_compaction_waits(tmp_path: Path) -> None:
    cluster, leader, _followers, ticks = _leading(tmp_path)
    replica = cluster.replicas[leader]
    replica.engine.force_compaction()
    replica.tick()
    assert ticks == [1]


def test_the_engine_shape_changes_with_each_link_even_at_the_same_count(
    tmp_path: Path,
) -> None:
    """Step watchers (the state log) skip their work while the shape is unchanged, so
    one member's link lost and another's back in between must still change it."""
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    engine = cluster.replicas[leader].engine
    others = [n for n in cluster.ids if n != leader]
    start = engine.shape
    assert engine.shape == start  # nothing changed
    engine.peer_connected(others[0], False)
    one = engine.shape
    assert one != start
    engine.peer_connected(others[1], False)
    engine.peer_connected(others[0], True)
    assert len(engine.connected) == 1 and engine.shape != one  # the other member now
    engine.peer_connected(others[1], True)
    assert engine.shape == start


def test_a_leaders_ticks_stay_light_while_a_snapshot_is_written_on_the_worker_thread(
    tmp_path: Path,
) -> None:
    cluster, leader, _followers, ticks = _leading(tmp_path)
    writer = cluster.replicas[leader].snapshots.writer
    writer.background = True
    under_way: Future[bytes] = Future()
    writer._future = under_way  # a write on the worker thread, not ended yet
    cluster.now += 0.001
    cluster.replicas[leader].tick()
    assert ticks == []  # its end is what a full tick waits for
    under_way.set_result(b"")
    cluster.replicas[leader].tick()
    assert ticks == [1]  # ended: the next tick reports it at once


def test_a_leader_ticks_fully_as_soon_as_a_heartbeat_is_due(tmp_path: Path) -> None:
    cluster, leader, _followers, ticks = _leading(tmp_path)
    replica = cluster.replicas[leader]
    results: list[object] = []
    _push(replica, "x", results)
    replica.prepare()  # its appends went out: the next heartbeat is a period away
    heartbeat = replica.config.engine.heartbeat_interval
    cluster.now += heartbeat / 2
    replica.tick()
    assert ticks == []
    cluster.now += heartbeat / 2 + 0.001  # due now, though the last full tick is recent
    replica.engine._full_tick_at = cluster.now - 0.001
    heartbeats = [m for m in replica.tick().messages.values()
                  if any(x["type"] == "append_entries" for x in m)]
    assert ticks == [1] and len(heartbeats) == 2

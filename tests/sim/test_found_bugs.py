"""Unit-level regressions for the defects the simulator found (each shown with and without
its fix where the fix can be switched off)."""

from __future__ import annotations

import random

import pytest

from lazily_queue.raft import patches
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.journal import DurableJournal, JournalCorruptedError
from lazily_queue.raft.records import decode_records
from lazily_queue.raft.replica import Replica
from lazily_queue.raft.snapshot import SnapshotError, decode_snapshot, encode_snapshot
from lazily_queue.replicated.ops import BARRIER
from lazily_queue.replicated.state_machine import StateMachine
from simulator.clock import VirtualClock, WallClock
from simulator.disk import SimDisk


def _candidate(members: int) -> tuple[Replica, VirtualClock]:
    clock = VirtualClock()
    ids = [str(i) for i in range(1, members + 1)]
    replica = Replica("1", ids, journal=DurableJournal(SimDisk(), "/n"),
                      snapshot_path="/n/snapshot.cbor", fsm=StateMachine(), clock=clock,
                      wall_clock=WallClock(clock), rng=random.Random(3))
    for peer in ids[1:]:
        replica.peer_connected(peer, True)
    clock.advance_to(5.0)
    replica.step()  # the election deadline passed: a pre-vote round at the next term
    for peer in ids[1 : members // 2 + 1]:
        replica.receive(peer, {"type": "pre_vote_response", "term": replica.engine.term + 1,
                               "granted": True})
    replica.step()
    assert replica.engine.state == 1
    return replica, clock


@pytest.mark.parametrize("fixed", [True, False])
def test_a_duplicated_vote_counts_once(fixed: bool) -> None:
    replica, _ = _candidate(5)
    vote = {"type": "response_vote", "term": replica.engine.term}
    if fixed:
        replica.receive("2", vote)
        replica.receive("2", vote)
        assert not replica.engine.is_leader
        replica.receive("3", vote)
        assert replica.engine.is_leader
        return
    with patches.disabled("count-each-vote-once"):
        replica.receive("2", vote)
        replica.receive("2", vote)
    assert replica.engine.is_leader  # one real vote of five: the defect


def _journal_bytes() -> tuple[SimDisk, list[int]]:
    disk = SimDisk()
    journal = DurableJournal(disk, "/n")
    for i in range(1, 7):
        journal.add(b"\x00" + bytes([i]) * 20, i, 1)
    journal.sync()
    _, offsets, _ = decode_records(disk.read("/n/journal.log") or b"")
    return disk, offsets


@pytest.mark.parametrize("byte", range(0, 45, 3))
def test_any_flipped_bit_of_a_middle_record_is_detected(byte: int) -> None:
    for bit in range(8):
        disk, offsets = _journal_bytes()
        disk.flip_bit("/n/journal.log", offsets[2] + byte, bit)
        with pytest.raises(JournalCorruptedError):
            DurableJournal(disk, "/n")


def test_a_record_that_lost_its_end_is_detected() -> None:
    disk, offsets = _journal_bytes()
    disk.punch("/n/journal.log", offsets[2] + 30, offsets[3])
    with pytest.raises(JournalCorruptedError):
        DurableJournal(disk, "/n")


def test_damage_to_the_first_record_after_compaction_is_detected() -> None:
    disk = SimDisk()
    journal = DurableJournal(disk, "/n")
    for i in range(1, 30):
        journal.add(b"\x00" + bytes([i]) * 20, i, 1)
    journal.sync()
    journal.deleteEntriesTo(20)  # compaction: the file now starts at index 21
    _, offsets, _ = decode_records(disk.read("/n/journal.log") or b"")
    disk.punch("/n/journal.log", 30, offsets[1])
    with pytest.raises(JournalCorruptedError):
        DurableJournal(disk, "/n")


def test_every_flipped_bit_of_a_snapshot_file_is_refused() -> None:
    doc = {"format": 1, "state": {"queues": {"q": [None, False, ["a", "b"]]}},
           "last": [b"\x00", 5, 1], "prev": [b"\x00", 4, 1], "members": ["1", "2", "3"]}
    raw = encode_snapshot(doc)
    assert decode_snapshot(raw)["members"] == ["1", "2", "3"]
    for offset in range(len(raw)):
        for bit in range(8):
            damaged = bytearray(raw)
            damaged[offset] ^= 1 << bit
            with pytest.raises(SnapshotError):
                decode_snapshot(bytes(damaged))


def _command(n: int) -> bytes:
    payload = encode_command(7, 1, [[n, BARRIER]])
    return b"\x00" + patches.safe_dumps((0, (payload, 1000)))


def test_a_crash_before_the_fsync_does_not_apply_entries_the_leader_replaced() -> None:
    disk, clock = SimDisk(), VirtualClock()

    def replica() -> Replica:
        return Replica("2", ["1", "2", "3"], journal=DurableJournal(disk, "/n"),
                       snapshot_path="/n/s", fsm=StateMachine(), clock=clock,
                       wall_clock=WallClock(clock),
                       rng=random.Random(1))

    follower = replica()
    follower.peer_connected("1", True)
    follower.receive("1", {"type": "append_entries", "term": 1, "commit_index": 2,
                           "prevLogIdx": 1, "prevLogTerm": 0,
                           "entries": [(_command(i), i, 1) for i in (2, 3, 4)]})
    follower.step()
    # A new leader of term 3 replaces entries 3 and 4 and says 4 is committed; the
    # records are written but the node dies before they are durable.
    follower.receive("3", {"type": "append_entries", "term": 3, "commit_index": 4,
                           "prevLogIdx": 2, "prevLogTerm": 1,
                           "entries": [(_command(10 + i), i, 3) for i in (3, 4)]})
    follower.step(sync=False)
    follower.journal.write()
    disk.crash(random.Random(0))
    restarted = replica()
    restarted.step()
    assert [e[2] for e in restarted.journal[:]] == [0, 1, 1, 1]  # the old entries are back
    assert restarted.engine.last_applied == 2  # ... but not applied as committed


@pytest.mark.parametrize("fixed", [True, False])
def test_a_stale_reset_does_not_undo_the_walk_back(fixed: bool) -> None:
    leader, _ = _candidate(3)
    leader.receive("2", {"type": "response_vote", "term": leader.engine.term})
    assert leader.engine.is_leader
    next_index = leader.engine._SyncObj__raftNextIndex
    peer = next(n for n in next_index if n.id == "3")

    def reset(value: int) -> None:
        leader.receive("3", {"type": "next_node_idx", "next_node_idx": value, "reset": True,
                             "success": False})

    if fixed:
        reset(5)
        reset(9)  # the answer to an older message: the follower's last index + 1
        assert next_index[peer] == 5
        return
    with patches.disabled("lowest-reset-next-index"):
        reset(5)
        reset(9)
    assert next_index[peer] == 9  # the defect: the walk back starts over


@pytest.mark.parametrize("fixed", [True, False])
def test_a_snapshot_chunk_does_not_commit_a_stale_suffix(fixed: bool) -> None:
    clock = VirtualClock()
    follower = Replica("2", ["1", "2", "3"], journal=DurableJournal(SimDisk(), "/n"),
                       snapshot_path="/n/s", fsm=StateMachine(), clock=clock,
                       wall_clock=WallClock(clock), rng=random.Random(1))
    follower.peer_connected("1", True)
    # Entries 2..4 of term 1 that the cluster later replaced (never committed here).
    follower.receive("1", {"type": "append_entries", "term": 1, "commit_index": 1,
                           "prevLogIdx": 1, "prevLogTerm": 0,
                           "entries": [(_command(i), i, 1) for i in (2, 3, 4)]})
    follower.step()
    assert follower.engine.commit_index == 1
    # A new leader, far ahead, starts sending its snapshot: the chunk message carries no
    # prevLogIdx, so it vouches for nothing in this follower's log.
    chunk = {"type": "append_entries", "term": 3, "commit_index": 90, "serialized": None}
    if fixed:
        follower.receive("3", chunk)
        assert follower.engine.commit_index == 1
        return
    with patches.disabled("snapshot-messages-commit-nothing"):
        follower.receive("3", chunk)
    assert follower.engine.commit_index == 4  # the defect: the stale suffix counts as committed


def _follower_with_entries(last: int, commit: int) -> Replica:
    clock = VirtualClock()
    follower = Replica("2", ["1", "2", "3"], journal=DurableJournal(SimDisk(), "/n"),
                       snapshot_path="/n/s", fsm=StateMachine(), clock=clock,
                       wall_clock=WallClock(clock), rng=random.Random(1))
    follower.peer_connected("1", True)
    follower.receive("1", {"type": "append_entries", "term": 1, "commit_index": commit,
                           "prevLogIdx": 1, "prevLogTerm": 0,
                           "entries": [(_command(i), i, 1) for i in range(2, last + 1)]})
    follower.step()
    return follower


def _snapshot_chunks(index: int, term: int) -> list[dict[str, object]]:
    raw = encode_snapshot({"format": 1, "state": StateMachine().capture(),
                           "last": (_command(index), index, term),
                           "prev": (_command(index - 1), index - 1, term),
                           "members": ["1", "2", "3"]})
    return [{"type": "append_entries", "term": 1, "commit_index": index, "serialized": data}
            for data in ((raw, True, False), (b"", False, True))]


@pytest.mark.parametrize("fixed", [True, False])
@pytest.mark.parametrize("commit", [3, 6])
def test_a_stale_snapshot_keeps_the_entries_after_it(fixed: bool, commit: int) -> None:
    # The follower holds entries 2..6 of term 1 and acknowledged them; a delayed copy of
    # a snapshot ending at entry 4 arrives (committed here or not: the entry is in the log).
    follower = _follower_with_entries(6, commit)
    assert follower.journal.last_index == 6
    with patches.disabled(*(() if fixed else ("no-stale-snapshot-install",))):
        for chunk in _snapshot_chunks(4, 1):
            follower.receive("1", chunk)
        follower.step()
    if fixed:
        assert follower.journal.last_index == 6
        assert follower.snapshots.installed == 0
        assert follower.snapshots.refused_stale == 1
        return
    assert follower.journal.last_index == 4  # the defect: acknowledged entries 5 and 6 gone


def test_a_newer_snapshot_is_still_installed() -> None:
    follower = _follower_with_entries(3, 3)
    for chunk in _snapshot_chunks(9, 1):
        follower.receive("1", chunk)
    follower.step()
    assert follower.snapshots.installed == 1
    assert follower.journal.last_index == 9
    assert follower.snapshots.refused_stale == 0


def test_the_simulator_fails_a_run_when_a_committed_entry_loses_its_majority() -> None:
    from simulator.cluster import Cluster
    from simulator.history import Violation
    from simulator.scenario import Scenario

    cluster = Cluster(Scenario(seed=1))
    for n in cluster.node_ids:
        cluster.start_node(n)
    cluster.run_until(3.0)
    assert cluster._kept is not None  # a leader was elected and committed its first entry
    index, term, members = cluster._kept
    cluster._check_kept()
    cluster._kept = (index + 1000, term, members)  # an entry no member holds
    with pytest.raises(Violation, match="held durably only by"):
        cluster._check_kept()


def test_a_leader_missing_from_a_followers_configuration_still_replicates_to_it() -> None:
    # Member 3 applied the removal of member 1 and missed its re-addition; member 1 now
    # leads. Its AppendEntries (carrying the re-addition) must reach member 3's log.
    clock = VirtualClock()
    follower = Replica("3", ["2", "3"], journal=DurableJournal(SimDisk(), "/n"),
                       snapshot_path="/n/s", fsm=StateMachine(), clock=clock,
                       wall_clock=WallClock(clock), rng=random.Random(1))
    follower.peer_connected("2", True)
    follower.receive("1", {"type": "append_entries", "term": 3, "commit_index": 2,
                           "prevLogIdx": 1, "prevLogTerm": 0,
                           "entries": [(_command(2), 2, 3)]})
    ready = follower.step()
    assert follower.journal.last_index == 2
    assert follower.engine.term == 3
    assert [m["type"] for m in ready.messages.get("1", [])] == ["next_node_idx"]
    follower.receive("1", {"type": "request_vote", "term": 4, "last_log_index": 9,
                           "last_log_term": 4})
    assert follower.engine.term == 3  # other messages from a non-member are dropped

"""The simulated disk's crash semantics, corruption detection on it, and rejoining empty."""

from __future__ import annotations

import errno
import random

import pytest

from lazily_queue.raft.journal import DurableJournal, JournalCorruptedError
from lazily_queue.raft.meta import decode_meta
from lazily_queue.raft.records import decode_records
from lazily_queue.raft.rejoin import FLOOR_KEY, floor_of, scan_newest, wipe_for_rejoin
from lazily_queue.raft.replica import Replica
from lazily_queue.replicated.state_machine import StateMachine
from simulator.clock import VirtualClock, WallClock
from simulator.disk import SimDisk

DIR = "/n/raft"


def _journal(disk: SimDisk, entries: int, term: int = 1) -> DurableJournal:
    journal = DurableJournal(disk, DIR)
    for i in range(1, entries + 1):
        journal.add(b"\x00" + bytes([i]) * 20, i, term)
    journal.setCurrentTerm(term, "2")
    journal.sync()
    return journal


def test_unsynced_appends_are_lost_or_torn_by_a_crash() -> None:
    kept_some = lost_all = zeros = 0
    for seed in range(40):
        disk = SimDisk()
        disk.append("/f", b"a" * 10)
        disk.sync("/f")
        disk.append("/f", b"b" * 10)
        disk.crash(random.Random(seed))
        raw = disk.read("/f")
        assert raw is not None
        data = raw.rstrip(b"\0")  # a preallocated file ends in zeros
        assert data.startswith(b"a" * 10) and len(data) <= 20
        kept_some += len(data) > 10
        lost_all += len(data) == 10
        zeros += len(raw) > len(data)
    assert kept_some and lost_all and zeros


def test_replace_is_atomic_and_durable_and_truncation_needs_sync() -> None:
    disk = SimDisk()
    disk.append("/f", b"0123456789")
    disk.sync("/f")
    disk.truncate("/f", 4)
    disk.replace("/m", b"meta")
    disk.crash(random.Random(1))
    assert (disk.read("/f") or b"").rstrip(b"\0") == b"0123456789"
    assert disk.read("/m") == b"meta"


def test_a_failed_fsync_fails_a_snapshot_replacement_and_keeps_the_previous_one() -> None:
    disk = SimDisk()
    path = f"{DIR}/snapshot.cbor"
    disk.replace(path, b"previous")
    disk.fail_fsyncs(1, random.Random(1))
    disk.replace(f"{DIR}/journal.meta", b"meta")  # only the snapshot's replacement fails
    with pytest.raises(OSError) as caught:
        disk.replace(path, b"next")
    assert caught.value.errno == errno.EIO
    assert disk.read(path) == b"previous" and disk.fsync_errors == 0
    disk.crash(random.Random(2))
    assert disk.read(path) == b"previous"
    disk.replace(path, b"next")
    assert disk.read(path) == b"next"


def test_a_flipped_bit_in_the_middle_is_detected_and_never_applied() -> None:
    disk = SimDisk()
    _journal(disk, 6)
    data = disk.read(f"{DIR}/journal.log")
    assert data is not None
    _, offsets, _ = decode_records(data)
    disk.flip_bit(f"{DIR}/journal.log", offsets[2] + 30, 3)
    with pytest.raises(JournalCorruptedError):
        DurableJournal(disk, DIR)


def test_rejoin_keeps_term_and_vote_and_sets_the_floor_past_the_corruption() -> None:
    disk = SimDisk()
    _journal(disk, 6, term=3)
    data = disk.read(f"{DIR}/journal.log")
    assert data is not None
    assert scan_newest(data) == (3, 6)
    _, offsets, _ = decode_records(data)
    disk.flip_bit(f"{DIR}/journal.log", offsets[1] + 25, 0)
    assert scan_newest(disk.read(f"{DIR}/journal.log") or b"") == (3, 6)
    disk.replace(f"{DIR}/snapshot.cbor", b"not cbor")
    assert wipe_for_rejoin(disk, DIR, f"{DIR}/snapshot.cbor") == (3, 6)
    assert disk.read(f"{DIR}/journal.log") is None
    assert disk.read(f"{DIR}/snapshot.cbor") is None
    meta = decode_meta(disk.read(f"{DIR}/journal.meta") or b"")[0]
    assert (meta["term"], meta["voted_for"], meta[FLOOR_KEY]) == (3, "2", [3, 6])
    journal = DurableJournal(disk, DIR)
    assert journal.last_index == 0 and floor_of(journal.meta) == (3, 6)


def _replica(disk: SimDisk, clock: VirtualClock) -> Replica:
    return Replica("1", ["1", "2", "3"], journal=DurableJournal(disk, DIR),
                   snapshot_path=f"{DIR}/snapshot.cbor", fsm=StateMachine(), clock=clock,
                   wall_clock=WallClock(clock), rng=random.Random(1))


def test_a_member_below_its_floor_grants_no_vote_until_it_caught_up() -> None:
    disk, clock = SimDisk(), VirtualClock()
    _journal(disk, 4, term=2)
    data = bytearray(disk.read(f"{DIR}/journal.log") or b"")
    _, offsets, _ = decode_records(bytes(data))
    disk.flip_bit(f"{DIR}/journal.log", offsets[1] + 25, 0)
    wipe_for_rejoin(disk, DIR, f"{DIR}/snapshot.cbor")
    replica = _replica(disk, clock)
    assert replica.engine.rejoining
    vote = {"type": "request_vote", "term": 5, "last_log_index": 1, "last_log_term": 0}
    replica.peer_connected("2", True)
    replica.receive("2", vote)
    assert "2" not in replica.step().messages
    assert replica.engine.term == 2
    replica.receive("2", {"type": "append_entries", "term": 5, "commit_index": 1,
                          "prevLogIdx": 1, "prevLogTerm": 0,
                          "entries": [(b"\x01", i, 2) for i in range(2, 5)]})
    replica.step()
    assert not replica.engine.rejoining
    vote = {"type": "request_vote", "term": 6, "last_log_index": 4, "last_log_term": 2}
    replica.receive("3", vote)
    replica.peer_connected("3", True)
    sent = replica.step().messages.get("3", [])
    assert {"type": "response_vote", "term": 6} in sent


def test_a_member_below_its_floor_votes_for_a_candidate_that_reaches_it() -> None:
    disk, clock = SimDisk(), VirtualClock()
    _journal(disk, 4, term=2)
    _, offsets, _ = decode_records(disk.read(f"{DIR}/journal.log") or b"")
    disk.flip_bit(f"{DIR}/journal.log", offsets[1] + 25, 0)
    wipe_for_rejoin(disk, DIR, f"{DIR}/snapshot.cbor")
    replica = _replica(disk, clock)
    replica.peer_connected("2", True)
    replica.peer_connected("3", True)
    replica.receive("2", {"type": "request_vote", "term": 5, "last_log_index": 3,
                          "last_log_term": 2})
    assert "2" not in replica.step().messages
    replica.receive("3", {"type": "request_vote", "term": 5, "last_log_index": 4,
                          "last_log_term": 2})
    assert {"type": "response_vote", "term": 5} in replica.step().messages.get("3", [])
    assert replica.engine.rejoining

"""Each PySyncObj defect we patch: reproduced with the patch off, gone with it on."""

from __future__ import annotations

import io
import os
import pickle
import random
from pathlib import Path

import pysyncobj.pickle as ps_pickle
import pysyncobj.syncobj as ps_syncobj
import pytest

from lazily_queue.errors import MessageTooLarge
from lazily_queue.raft import entries, patches
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.engine import MAX_COMMAND_BYTES, EngineConfig
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine

from .harness import Manual


def _entries_sent(cluster: Manual, src: str, dst: str) -> int:
    return sum(
        len(m.get("entries") or ())
        for s, d, m in cluster.sent
        if s == src and d == dst and m["type"] == "append_entries"
    )


def _pipelined_pushes(tmp_path: Path, pushes: int = 60, lag: int = 10) -> tuple[int, int]:
    """Push one entry per round while acknowledgements arrive ``lag`` rounds late."""
    cluster = Manual(tmp_path, ("1", "2"))
    leader = cluster.elect()
    follower = "2" if leader == "1" else "1"
    cluster.declare_queue(leader)
    start = _entries_sent(cluster, leader, follower)
    delayed: list[tuple[int, tuple[str, str, dict[str, object]]]] = []
    for n in range(pushes + lag):
        if n < pushes:
            cluster.propose(leader, C.QUEUE_PUSH, ["q", n])
        cluster.step_all()
        queued, cluster.in_flight = cluster.in_flight, []
        for item in queued:
            if item[2]["type"] == "next_node_idx":
                delayed.append((n + lag, item))
            else:
                cluster.in_flight.append(item)
        cluster.in_flight.extend(item for due, item in delayed if due <= n)
        delayed = [(due, item) for due, item in delayed if due > n]
        cluster.deliver()
    for _ in range(20):
        cluster.round()
    applied = cluster.views[follower].queues["q"].len()
    return _entries_sent(cluster, leader, follower) - start, applied


def test_forward_only_next_index(tmp_path: Path) -> None:
    sent, applied = _pipelined_pushes(tmp_path / "patched")
    assert applied == 60
    assert sent <= 70, f"{sent} entries sent for 60 pushes"
    with patches.disabled("forward-only-next-index"):
        stock_sent, stock_applied = _pipelined_pushes(tmp_path / "stock")
    assert stock_applied == 60
    # Every late acknowledgement rewinds nextIndex and re-sends what is in flight.
    assert stock_sent >= 4 * sent, (stock_sent, sent)


def _stale_heartbeat_truncates(tmp_path: Path) -> tuple[int, int]:
    cluster = Manual(tmp_path, ("1", "2"))
    leader = cluster.elect()
    follower = "2" if leader == "1" else "1"
    cluster.declare_queue(leader)
    early = [
        m for s, d, m in cluster.sent
        if s == leader and d == follower and m["type"] == "append_entries" and "prevLogIdx" in m
    ][-1]
    for n in range(10):  # one round each: ten separate entries
        cluster.propose(leader, C.QUEUE_PUSH, ["q", n])
        cluster.round()
    for _ in range(5):
        cluster.round()
    journal = cluster.replicas[follower].journal
    before = journal.last_index
    assert early["prevLogIdx"] < before - 5
    # The same message again (a duplicate, or one delayed past newer ones).
    cluster.replicas[follower].receive(leader, dict(early))
    return before, journal.last_index


def test_no_spurious_truncation(tmp_path: Path) -> None:
    before, after = _stale_heartbeat_truncates(tmp_path / "patched")
    assert after == before
    with patches.disabled("no-spurious-truncation"):
        before, after = _stale_heartbeat_truncates(tmp_path / "stock")
    assert after < before, "stock PySyncObj drops acknowledged entries on a stale message"


def test_real_conflict_still_truncates(tmp_path: Path) -> None:
    cluster = Manual(tmp_path, ("1", "2"))
    leader = cluster.elect()
    follower = cluster.replicas["2" if leader == "1" else "1"]
    cluster.declare_queue(leader)
    for n in range(5):
        cluster.propose(leader, C.QUEUE_PUSH, ["q", n])
        cluster.round()
    for _ in range(5):
        cluster.round()
    journal = follower.journal
    last = journal.last_index
    term = follower.engine.term
    conflict_at = last - 2
    message = {
        "type": "append_entries",
        "term": term,
        "commit_index": 0,
        "prevLogIdx": conflict_at - 1,
        "prevLogTerm": journal.term_at(conflict_at - 1),
        "entries": [(b"\x01", conflict_at, term + 7)],
    }
    follower.receive(leader, message)
    assert journal.last_index == conflict_at
    assert journal.term_at(conflict_at) == term + 7


def _apply_failure(tmp_path: Path) -> tuple[int, int]:
    cluster = Manual(tmp_path, ("1",))
    leader = cluster.elect()
    replica = cluster.replicas[leader]
    cluster.declare_queue(leader)
    original = replica.fsm.apply

    def flaky(payload: bytes, stamp: int) -> object:
        if b"boom" in payload:
            raise RuntimeError("state machine bug")
        return original(payload, stamp)

    replica.engine._apply_fn = flaky
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "boom"])
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "fine"])
    for _ in range(5):
        try:
            cluster.round()
        except RuntimeError:
            pass
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "after"])
    for _ in range(5):
        try:
            cluster.round()
        except RuntimeError:
            pass
    behind = replica.engine.commit_index - replica.engine.last_applied
    return behind, cluster.views[leader].queues["q"].len()


def test_safe_apply(tmp_path: Path) -> None:
    lag, length = _apply_failure(tmp_path / "patched")
    assert lag == 0 and length == 1  # only "after"; the failing batch held "boom" and "fine"
    with patches.disabled("safe-apply"):
        lag, length = _apply_failure(tmp_path / "stock")
    assert lag > 0 and length == 0, "stock PySyncObj retries the failing entry forever"


class _Gadget:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.getenv, ("HOME",))


def test_restricted_pickle_refuses_globals() -> None:
    evil = pickle.dumps(_Gadget(), 2)
    assert pickle.loads(evil) == os.getenv("HOME")  # what the stock loader would do
    with pytest.raises(patches.UnsafePickleError, match=r"os\.getenv|posix\.getenv"):
        ps_pickle.loads(evil)
    with pytest.raises(patches.UnsafePickleError):
        ps_pickle.load(io.BytesIO(evil))
    # The stock fallback retried with the unrestricted pure-Python unpickler.
    assert ps_pickle.loads is patches.restricted_loads


def test_pickles_written_need_no_globals() -> None:
    value = (3, (b"payload", None), ["add", "4"], 1.5, True)
    assert b"_codecs" in pickle.dumps(b"x", 2)  # protocol 2 pickles bytes through a global
    data = ps_pickle.dumps(value)
    assert b"_codecs" not in data
    assert ps_pickle.loads(data) == value


def test_pipe_notifier_overflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Submits between ticks never write to the library's pipe: the notifier is off, and
    the engine's configuration (appends sent by the engine) never creates one anyway."""
    def submit_many(root: Path) -> None:
        cluster = Manual(root, ("1",))
        engine = cluster.replicas["1"].engine
        for _ in range(70_000):
            engine.submit(encode_command(1, 0, []), lambda r, e: None)

    submit_many(tmp_path / "patched")
    monkeypatch.setattr(ps_syncobj, "PIPE_NOTIFIER_ENABLED", True)
    submit_many(tmp_path / "notifier-enabled")


def test_cut_off_leader_steps_down_within_fallback(tmp_path: Path) -> None:
    def isolated_after(root: Path, fallback: float) -> bool:
        config = ReplicaConfig(engine=EngineConfig(leader_fallback_timeout=fallback))
        cluster = Manual(root, config=config)
        leader = cluster.elect()
        for _ in range(30):  # 1.5 s with no messages to or from the leader
            cluster.now += 0.05
            cluster.round(keep=lambda item: leader in item[:2])
            cluster.in_flight = [i for i in cluster.in_flight if leader not in i[:2]]
        return cluster.replicas[leader].engine.is_leader

    assert not isolated_after(tmp_path / "ours", 1.0)
    assert isolated_after(tmp_path / "stock", 30.0)


def test_commits_without_waiting_for_a_heartbeat(tmp_path: Path) -> None:
    cluster = Manual(tmp_path)
    leader = cluster.elect()
    cluster.declare_queue(leader)
    frozen = cluster.now
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "x"])
    for _ in range(6):
        cluster.round()
    assert cluster.now == frozen
    assert all(v.queues["q"].elements() == ["x"] for v in cluster.views.values())


def test_commands_stay_below_the_chunking_threshold(tmp_path: Path) -> None:
    """PySyncObj sends an entry at least as large as its append batch down a broken
    chunked path; the batch always exceeds the largest command."""
    cluster = Manual(tmp_path, ("1",))
    replica = cluster.replicas["1"]
    engine = replica.engine
    assert engine.max_command_bytes == MAX_COMMAND_BYTES
    assert engine.append_batch_bytes > MAX_COMMAND_BYTES + entries.HEAD_SIZE
    assert engine._SyncObj__conf.appendEntriesBatchSizeBytes == engine.append_batch_bytes
    with pytest.raises(MessageTooLarge, match="1048577 bytes exceeds the 1048576-byte"):
        replica.propose(C.QUEUE_PUSH, ["q", b"x" * (1024 * 1024 + 1)], timeout=1,
                        on_done=lambda r, e: None)
    with pytest.raises(MessageTooLarge, match="replicated command limit"):
        replica.propose(C.QUEUE_DECLARE, ["q" * MAX_COMMAND_BYTES, None], timeout=1,
                        on_done=lambda r, e: None)
    with pytest.raises(ValueError, match="exceeds"):
        replica.engine.submit(b"x" * (MAX_COMMAND_BYTES + 1), lambda r, e: None)


def test_snapshot_entries_come_back_as_tuples(tmp_path: Path) -> None:
    """PySyncObj wipes its journal when the snapshot's anchor entries are not tuples."""
    cluster = Manual(tmp_path, ("1",))
    leader = cluster.elect()
    cluster.declare_queue(leader)
    for n in range(20):
        cluster.propose(leader, C.QUEUE_PUSH, ["q", n])
    for _ in range(5):
        cluster.round()
    replica = cluster.replicas[leader]
    replica.engine.force_compaction()
    for _ in range(3):
        cluster.round()
    assert replica.snapshots.taken == 1
    _, last, prev, _ = replica.snapshots.deserialize()
    assert type(last) is tuple and type(prev) is tuple
    assert replica.journal[0] == prev and replica.journal[1] == last
    assert StateMachine is type(replica.fsm)


def _cut_off_leader_shrinks_to_one(root: Path) -> tuple[list[str], bool]:
    cluster = Manual(root)
    leader = cluster.elect()
    followers = [n for n in cluster.ids if n != leader]
    cluster.declare_queue(leader)
    engine = cluster.replicas[leader].engine
    answers: list[int] = []
    for follower in followers:  # the leader is cut off: nothing it sends arrives
        engine.remove_member(follower, lambda _, reason: answers.append(reason))
        cluster.step(leader)
        cluster.in_flight.clear()
    cluster.propose(leader, C.QUEUE_PUSH, ["q", "alone"])
    for _ in range(5):
        cluster.step(leader)
        cluster.in_flight.clear()
    alone = cluster.views[leader].queues["q"].elements() == ["alone"]
    return engine.members, alone


def test_one_membership_change_at_a_time(tmp_path: Path) -> None:
    members, committed_alone = _cut_off_leader_shrinks_to_one(tmp_path / "patched")
    assert len(members) == 2 and not committed_alone  # the second removal was refused
    with patches.disabled("one-membership-change-at-a-time"):
        members, committed_alone = _cut_off_leader_shrinks_to_one(tmp_path / "stock")
    # Stock: a leader nobody hears removed both followers and now commits on its own.
    assert len(members) == 1 and committed_alone


def test_the_engine_clock_is_routed_inside_nested_blocks_and_restored_after_errors() -> None:
    library = ps_syncobj
    outer = patches.engine_env(lambda: 1.0, random.Random(1))
    inner = patches.engine_env(lambda: 2.0, random.Random(2))
    before = library.monotonicTime()
    with outer:
        assert library.monotonicTime() == 1.0
        with pytest.raises(RuntimeError), inner:
            assert library.monotonicTime() == 2.0
            raise RuntimeError("inside")
        assert library.monotonicTime() == 1.0
        with outer:  # the same block again, nested in itself
            assert library.monotonicTime() == 1.0
        assert library.monotonicTime() == 1.0
    assert library.monotonicTime() != 1.0 and library.monotonicTime() >= before

"""Installing a snapshot: decoded once, its state prepared apart and installed whole."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.raft import snapshot as snapshot_module
from lazily_queue.raft.batch import encode_command
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.snapshot import SnapshotStore, decode_snapshot, encode_snapshot
from lazily_queue.replicated import ops, state_snapshot
from lazily_queue.replicated.op_table import SECTIONS
from lazily_queue.replicated.state_machine import StateMachine

from .harness import Manual

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datadirs"


class _Proposer:
    """One session applying batches in order."""

    def __init__(self, sm: StateMachine, session: int) -> None:
        self.sm, self.session, self.seq, self.stamp = sm, session, 0, 1_000

    def apply(self, *op_list: list[Any]) -> list[Any]:
        first, self.seq, self.stamp = self.seq + 1, self.seq + len(op_list), self.stamp + 1
        batch = [[first + i, *op] for i, op in enumerate(op_list)]
        result = self.sm.apply(encode_command(self.session, first, batch), self.stamp)
        assert isinstance(result, list)
        return result


def _machine(session: int, payload: bytes) -> StateMachine:
    """A queue and a work queue with settled receipts and live items."""
    sm = StateMachine()
    p = _Proposer(sm, session)
    p.apply([ops.QUEUE_DECLARE, "q", None], [ops.WORK_DECLARE, "w", 30_000, 3])
    p.apply(*([[ops.QUEUE_PUSH, "q", payload]] * 5), *([[ops.WORK_PUSH, "w", payload]] * 20))
    claims = p.apply(*([[ops.WORK_CLAIM, "w", "worker", None]] * 10))
    p.apply(*[[ops.WORK_ACK, "w", "worker", d["delivery_id"]] for d, _m in claims])
    return sm


def _raw(state: Any, index: int = 100) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": (b"", index, 1),
                            "prev": (b"", index - 1, 1), "members": []})


def _transmit(store: SnapshotStore, raw: bytes) -> bool:
    assert not store.setTransmissionData((raw[:1000], True, False))
    store.setTransmissionData((raw[1000:], False, False))
    return store.setTransmissionData((b"", False, True))


def _store(tmp_path: Path, sm: StateMachine) -> SnapshotStore:
    return SnapshotStore(OsDisk(sync=False), str(tmp_path / "snapshot.cbor"),
                         capture=lambda: sm.capture(deferred=True), prepare=sm.prepare,
                         install=sm.install)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times a snapshot is decoded and a state restored."""
    calls = {"decode": 0, "restore": 0}
    decode, restore = snapshot_module.decode_snapshot, state_snapshot.restore

    def decoding(raw: bytes) -> dict[str, Any]:
        calls["decode"] += 1
        return decode(raw)

    def restoring(*args: Any) -> None:
        calls["restore"] += 1
        restore(*args)

    monkeypatch.setattr(snapshot_module, "decode_snapshot", decoding)
    monkeypatch.setattr(state_snapshot, "restore", restoring)
    return calls


def test_a_leaders_snapshot_is_decoded_and_restored_once(
        tmp_path: Path, counted: dict[str, int]) -> None:
    leader, follower = _machine(9, b"L" * 50), _machine(7, b"f" * 50)
    store = _store(tmp_path, follower)
    assert _transmit(store, _raw(leader.capture(deferred=True)))
    _, last, prev, members = store.deserialize()
    assert (last, prev, members) == ((b"", 100, 1), (b"", 99, 1), [])
    assert counted == {"decode": 1, "restore": 1}
    assert follower.capture() == leader.capture()


def test_a_stored_snapshot_is_decoded_and_restored_once_at_start(
        tmp_path: Path, counted: dict[str, int]) -> None:
    cluster = Manual(tmp_path, ("1",))
    leader = cluster.elect()
    cluster.declare_queue(leader)
    for n in range(20):
        cluster.propose(leader, ops.QUEUE_PUSH, ["q", n])
    for _ in range(5):
        cluster.round()
    cluster.replicas[leader].engine.force_compaction()
    for _ in range(3):
        cluster.round()
    assert cluster.replicas[leader].snapshots.taken == 1
    held = cluster.replicas[leader].fsm.capture()
    before = dict(counted)
    restarted = cluster.start(leader)
    assert {k: counted[k] - before[k] for k in counted} == {"decode": 1, "restore": 1}
    assert restarted.fsm.capture()["queues"] == held["queues"]


def _refused_state(leader: StateMachine) -> dict[str, Any]:
    """``leader``'s state with a section that does not restore, after the queues and
    sessions a restore in place replaces first."""
    state = leader.capture()
    state["ended_sessions"] = "not a list"
    return state


def test_a_leaders_snapshot_that_does_not_restore_leaves_the_state_unchanged(
        tmp_path: Path) -> None:
    follower = _machine(7, b"f" * 50)
    store = _store(tmp_path, follower)
    held = follower.capture()
    assert not _transmit(store, _raw(_refused_state(_machine(9, b"L" * 50))))
    assert follower.capture() == held
    assert store.installed == 0 and not store.stored


def test_a_state_that_does_not_restore_leaves_the_machine_unchanged() -> None:
    follower = _machine(7, b"f" * 50)
    held, events = follower.capture(), list(follower.events)
    with pytest.raises(ValueError, match="ended_sessions"):
        follower.restore(_refused_state(_machine(9, b"L" * 50)))
    assert follower.capture() == held
    assert follower.events == events  # no Restored


@pytest.mark.parametrize("fixture", sorted(FIXTURES.glob("*/raft/snapshot.cbor")),
                         ids=lambda p: p.parts[-3])
def test_the_stored_fixtures_install_as_a_restore_in_place_does(fixture: Path) -> None:
    state = decode_snapshot(fixture.read_bytes())["state"]
    in_place = StateMachine()
    state_snapshot.restore(in_place, SECTIONS, copy.deepcopy(state))
    installed = _machine(7, b"f" * 50)  # over a state of its own
    installed.install(installed.prepare(copy.deepcopy(state)))
    assert installed.capture() == in_place.capture()

"""Receipts held in columns answer, drop and snapshot as their list form did: a
snapshot's odd but valid lists (a delivery listed twice, stamps out of order, ids past
64 bits) restore to the same receipts and order; a malformed one is refused by name;
receipts take about a hundred bytes each, a queue whose receipts all went none; and
a restored table holds none of the decoded snapshot's ints (they would pin its memory)."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from typing import Any

import cbor2
import pytest

from lazily_queue.errors import InvalidSnapshot
from lazily_queue.raft.snapshot import encode_snapshot
from lazily_queue.raft.snapshot_pieces import Later
from lazily_queue.replicated import objects, ops
from lazily_queue.replicated.receipts import ReceiptLedger, ReceiptTable, restore_receipts
from lazily_queue.replicated.state_machine import StateMachine

from .test_bounded_state import Proposer
from .test_receipts_total import _busy, _kept, _machine, _restored, _settle


def _doc(sm: StateMachine) -> Any:
    return cbor2.loads(cbor2.dumps(sm.capture()))


def _file(state: dict[str, Any]) -> bytes:
    return encode_snapshot({"format": 1, "state": state, "last": [b"b", 9, 1],
                            "prev": [b"a", 8, 1], "members": ["1"]})


def _shuffled(doc: Any) -> Any:
    """``doc`` with the stamps of its receipts out of order in every queue."""
    for position, entry in enumerate(doc["work_queues"].values()):
        for index, receipt in enumerate(entry["receipts"]):
            receipt[4] = 1_000 + (index * 7 + position * 3) % 23
    return doc


def _one_queue(settled: int = 6) -> tuple[StateMachine, Proposer, list[int]]:
    sm = _machine()
    proposer = Proposer(sm)
    proposer.apply([ops.WORK_DECLARE, "a", 30_000, 3])
    return sm, proposer, [d for _, d in _settle(proposer, "a", settled)]


def test_a_delivery_listed_twice_takes_the_later_receipt_where_the_first_stands() -> None:
    sm, _, ids = _one_queue()
    doc = _doc(sm)
    listed = doc["work_queues"]["a"]["receipts"]
    again = [listed[1][0], 77, "other", "nacked", listed[1][4]]
    doc["work_queues"]["a"]["receipts"] = [*listed, again]
    copy = _machine()
    copy.restore(doc)
    receipts = copy.work_queues["a"].receipts
    assert list(receipts) == ids
    assert receipts[ids[1]] == again
    assert copy.capture()["work_queues"]["a"]["receipts"] == [
        *listed[:1], again, *listed[2:]]


def test_receipts_listed_out_of_stamp_order_go_by_stamp_then_queue_then_place() -> None:
    sm = _machine(limit=10 * 100)
    _busy(sm)
    doc = _shuffled(_doc(sm))
    order = sorted(((r[4], position, index), (name, r[0]))
                   for position, (name, entry) in enumerate(doc["work_queues"].items())
                   for index, r in enumerate(entry["receipts"]))
    copy = _machine()
    copy.restore(doc)
    assert _kept(copy) == {key for _, key in order[-100:]}
    assert _restored(copy).capture() == copy.capture()
    # Settling more drops the rest in that order, live and restored alike.
    replicas = [copy, _restored(copy)]
    for replica in replicas:
        more = Proposer(replica, seq=10**6)
        more.stamp = replica.now
        _settle(more, "b", 30)
    assert _kept(replicas[0]) == _kept(replicas[1])
    assert {key for _, key in order[-70:]} <= _kept(replicas[0])
    assert replicas[0].capture() == replicas[1].capture()


def test_delivery_ids_past_64_bits_keep_their_receipts() -> None:
    sm = _machine()
    proposer = Proposer(sm)
    proposer.apply([ops.WORK_DECLARE, "a", 30_000, 3])
    doc = _doc(sm)
    doc["work_queues"]["a"]["core"]["next_delivery_id"] = 2**64
    sm = _machine()
    sm.restore(doc)
    proposer = Proposer(sm, seq=proposer.seq)
    settled = _settle(proposer, "a", 3)
    assert [d for _, d in settled] == [2**64, 2**64 + 1, 2**64 + 2]
    copy = _restored(sm)
    assert copy.capture() == sm.capture()
    for replica in (sm, copy):
        retry = Proposer(replica, session=99)
        ok, _, receipt, duplicate = retry.apply([ops.WORK_ACK, "a", "worker", 2**64 + 1])[0]
        assert (ok, duplicate) == (False, True) and receipt[:2] == [2**64 + 1, 1]


@pytest.mark.parametrize("shuffled", [False, True])
def test_a_snapshot_files_receipts_are_made_where_it_is_encoded_as_captured(
        shuffled: bool) -> None:
    sm = _machine(limit=1000)
    proposer, _ = _busy(sm)
    if shuffled:  # receipts dropped out of their queues' order leave holes there
        doc = _shuffled(_doc(sm))
        sm = _machine(limit=100)
        sm.restore(doc)
        proposer = Proposer(sm, seq=proposer.seq)
        proposer.stamp = sm.now
    plain = sm.capture()
    deferred = sm.capture(deferred=True)
    assert (type(deferred["work_queues"]["b"]["receipts"]) is Later) is not shuffled
    _settle(proposer, "b", 40)  # the state goes on: receipts dropped and added
    _settle(proposer, "a", 3)
    assert _file(deferred) == _file(plain)
    assert plain != sm.capture()


@pytest.mark.parametrize("receipt", [
    ["1", 0, "worker", "acked", 5], [1, 0, "worker", "done", 5], [1, 0, None, "acked", 5],
    [1, 0, "worker", "acked"], [1, 0, "worker", "acked", 5.5], [True, 0, "w", "acked", 5],
    {"delivery_id": 1}])
def test_a_malformed_receipt_is_refused_by_its_form(receipt: Any) -> None:
    sm, _, _ = _one_queue()
    doc = _doc(sm)
    doc["work_queues"]["a"]["receipts"].append(receipt)
    with pytest.raises(InvalidSnapshot, match=r"receipt must be \[delivery_id, item_id"):
        _machine().restore(doc)
    mirror = _machine()
    work_doc = cbor2.loads(cbor2.dumps(objects.capture(sm, "work_queue", "a")))
    objects.install(mirror, "work_queue", "a", work_doc)
    work_doc["receipts"].append(receipt)
    before = objects.capture(mirror, "work_queue", "a")
    with pytest.raises(ValueError, match=r"receipt must be \[delivery_id, item_id"):
        objects.install(mirror, "work_queue", "a", work_doc)
    assert objects.capture(mirror, "work_queue", "a") == before


def test_receipts_take_about_a_hundred_bytes_each_and_a_drained_queue_none() -> None:
    per_queue = 1024
    ledger = ReceiptLedger(limit=4 * per_queue)
    tables = [ReceiptTable() for _ in range(12)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        delivery = 10**6
        for table in tables:  # each queue full in turn: the newest four hold them all
            for _ in range(per_queue // 64):
                for _ in range(64):  # ids, worker and outcome as a decoded op has them
                    delivery += 1
                    ledger.keep(table, [delivery, delivery * 3, "".join(["worker-", "7"]),
                                        "".join(["ac", "ked"]), delivery // 64], per_queue)
        gc.collect()
        per_receipt = (tracemalloc.get_traced_memory()[0] - before) / ledger.total
    finally:
        tracemalloc.stop()
    assert [len(table) for table in tables] == [0] * 8 + [per_queue] * 4
    assert per_receipt < 150  # a list, an OrderedDict entry and a heap entry took 435


def test_a_restored_table_keeps_no_reference_to_the_snapshots_delivery_ids() -> None:
    base = 10**6 + len(gc.get_objects()) % 7  # ints made here, not shared constants
    listed = [[base + i, base + i, "worker", "acked", base] for i in range(50)]
    counts = [sys.getrefcount(receipt[0]) for receipt in listed]
    table = ReceiptTable()
    restore_receipts(table, listed, 4096)
    assert [sys.getrefcount(receipt[0]) for receipt in listed] == counts
    assert list(table) == [base + i for i in range(50)]
    assert table[base + 7] == [base + 7, base + 7, "worker", "acked", base]

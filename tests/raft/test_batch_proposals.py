"""Batches of one op (``push_many``, ``publish_many``): each op encoded once, all before
the first is proposed, and the bytes proposed are those a direct encoding gives; a batch
its proposer remembers decodes as decoding it gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cbor2
import pytest

from lazily_queue import testing
from lazily_queue.raft import batch, values
from lazily_queue.raft.batch import (
    decode_command,
    encode_batch,
    encode_checked_op,
    encode_command,
    with_seq,
)
from lazily_queue.replicated import ops as C
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("args", [
    ["q", 1], ["q", {"a": (1, 2)}], ["q", "x" * 300], list(range(30)), list(range(300)),
])
@pytest.mark.parametrize("seq", [1, 23, 24, 255, 256, 65_536, 2**32, 2**63])
def test_a_sequence_number_stamped_later_gives_the_direct_encoding(args: list[Any],
                                                                   seq: int) -> None:
    encoded = encode_checked_op(0, C.QUEUE_PUSH, args, max_bytes=1 << 20, name="queue_push")
    assert with_seq(encoded, seq) == values.dumps([seq, C.QUEUE_PUSH, *args])
    assert cbor2.loads(with_seq(encoded, seq))[0] == seq


@pytest.mark.parametrize("session", [1, 23, 24, 2**32, 2**62, 2**64 - 1, 2**64, -1])
def test_a_batch_of_encoded_ops_is_the_batch_encode_command_writes(session: int) -> None:
    """The batch's head, written from the session's cached head and the floor, is the
    one cbor2 writes, byte for byte, whatever the numbers' sizes."""
    ops = [[seq, C.QUEUE_PUSH, "q", b"x" * seq] for seq in range(1, 30)]
    for floor in (0, 1, 23, 24, 255, 256, 65_535, 65_536, 2**32 - 1, 2**32, 2**64, -5):
        for n in (0, 1, 29):
            encoded = [values.dumps(op) for op in ops[:n]]
            assert encode_batch(session, floor, encoded) == encode_command(session, floor,
                                                                           ops[:n])


def _typed(value: Any) -> Any:
    """``value`` with the type of everything in it (nan by its text, as nan != nan)."""
    if type(value) in (list, tuple):
        return type(value), [_typed(v) for v in value]
    return type(value), repr(value) if value != value else value


@pytest.mark.parametrize("args", [
    ["q", b"x" * 100], ["q", "text", None, True, False], [],
    [-(2**64), 2**64 - 1, 0, -1, 2**63], [0.5, -0.0, float("inf"), float("nan"), 1e300],
])
def test_a_batch_its_proposer_remembers_decodes_as_decoding_gives(args: list[Any]) -> None:
    """The path that skips decoding a batch proposed here gives what decoding gives,
    types included, once."""
    assert values.plain(args)
    ops = [[seq, C.QUEUE_PUSH, *args] for seq in (1, 2, 300)]
    payload = encode_batch(2**40, 1, [values.dumps(op) for op in ops])
    decoded = decode_command(payload)
    batch.remember(payload, 2**40, 1, [[seq, code, *rest] for seq, code, *rest in ops])
    remembered = decode_command(bytes(payload))  # an equal payload, not the same object
    assert _typed(remembered) == _typed(decoded)
    again = decode_command(payload)
    assert again is not remembered and _typed(again) == _typed(decoded)


async def test_a_member_remembers_only_batches_of_plain_values(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:
    remembered: list[list[list[Any]]] = []
    remember = batch.remember
    monkeypatch.setattr("lazily_queue.raft.replica.remember",
                        lambda payload, session, floor, ops: (remembered.append(ops),
                                                              remember(payload, session,
                                                                       floor, ops)))
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        orders = cluster.node(1).queue("orders")
        await orders.push(b"x")
        await orders.push({"a": [1, (2, 3)]})
        await orders.push("y")
        assert [await orders.pop() for _ in range(3)] == [b"x", {"a": [1, (2, 3)]}, "y"]
    assert [op[2:] for ops in remembered for op in ops if op[1] == C.QUEUE_PUSH] == [
        ["orders", b"x"], ["orders", "y"]]


def test_only_an_op_encoded_with_sequence_number_0_is_stamped() -> None:
    encoded = encode_checked_op(5, C.QUEUE_PUSH, ["q", 1], max_bytes=1 << 20, name="q")
    with pytest.raises(ValueError, match="sequence number 0"):
        with_seq(encoded, 7)


async def test_a_member_encodes_each_value_of_a_batch_once(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        jobs, news, orders = node.work_queue("jobs"), node.topic("news"), node.queue("orders")
        await news.subscribe("s")
        for cell in (jobs, orders):
            await cell.push("declared")
        await news.publish("declared")
        replica = node.driver.replica
        counted = _count(monkeypatch, replica, "encode")
        await jobs.push_many(range(40))
        await news.publish_many(range(40))
        await orders.push_many(range(40))
        assert counted == {C.WORK_PUSH: 40, C.TOPIC_PUBLISH: 40, C.QUEUE_PUSH: 40}
        assert await orders.pop_many(100) == ["declared", *range(40)]


async def test_a_client_encodes_each_value_of_a_batch_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with cluster_with_clients() as (_, addresses), client_of(addresses) as client:
        orders = client.queue("orders")
        await orders.push("declared")
        counted = _count(monkeypatch, client.session, "encode")
        await orders.push_many(range(40))
        assert counted == {C.QUEUE_PUSH: 40}
        assert await orders.pop_many(100) == ["declared", *range(40)]


async def test_a_batch_one_op_of_which_cannot_be_proposed_proposes_none(
        tmp_path: Path) -> None:
    async with testing.cluster(1, data_dir=tmp_path) as cluster:
        node = cluster.node(1)
        orders = node.queue("orders")
        await orders.push("declared")
        driver = node.driver
        ops = [["orders", value] for value in range(5)]
        encoded = [driver.encode(C.QUEUE_PUSH, op) for op in ops]
        encoded[3] = encode_checked_op(9, C.QUEUE_PUSH, ops[3], max_bytes=1 << 20, name="q")
        with pytest.raises(ValueError, match="sequence number 0"):
            await driver.call_many(C.QUEUE_PUSH, ops, encoded, timeout=5.0)
        await node.barrier()
        assert await orders.pop_many(200) == ["declared"]
        assert driver.replica.pending == 0


def _count(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> dict[int, int]:
    """Count ``owner.name(code, args)`` calls per op code."""
    counts: dict[int, int] = {}
    original = getattr(owner, name)

    def counted(code: int, args: list[Any]) -> Any:
        counts[code] = counts.get(code, 0) + 1
        return original(code, args)

    monkeypatch.setattr(owner, name, counted)
    return counts

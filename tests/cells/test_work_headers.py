"""Message headers on work queues: every delivery of an item carries the headers it was
pushed with (redeliveries after a nack included); local and replicated, in snapshots."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from lazily_queue import InvalidHeaders, WorkQueueCell, testing
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine


async def _headers_travel(w: WorkQueueCell) -> None:
    first = await w.push({"n": 1}, headers={"trace": "t-1"})
    await w.push({"n": 2})
    async with contextlib.aclosing(w.deliveries("a")) as deliveries:
        async for job in deliveries:
            assert job.headers == {"trace": "t-1"} and job.delivery.item_id == first
            await job.nack()
            break
    async with contextlib.aclosing(w.deliveries("b")) as deliveries:
        async for job in deliveries:  # the redelivery keeps the item's headers
            await job.ack()
            if job.delivery.item_id != first:
                assert job.headers == {}
                continue
            assert job.headers == {"trace": "t-1"} and job.delivery_count == 2
            break
    assert await w.push("x", msg_id="m", headers={"try": "1"}) == await w.push(
        "x", msg_id="m", headers={"try": "2"})
    last = await w.claim("a")
    assert w.headers_of(last.item_id) == {"try": "1"}
    with pytest.raises(InvalidHeaders, match="must be str"):
        await w.push("y", headers={"k": 7})  # type: ignore[dict-item]


async def test_work_headers_locally() -> None:
    await _headers_travel(WorkQueueCell(clock=lambda: 0.0))


async def test_work_headers_on_a_cluster() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        await _headers_travel(leader.work_queue("w"))


def test_work_headers_in_snapshots_leave_with_their_items() -> None:
    sm = StateMachine()
    sm.apply_plain(C.WORK_DECLARE, ["w", 1000, 3])
    item, _ = sm.apply_plain(C.WORK_PUSH_HEADERS, ["w", {"a": "1"}, None, "x"])
    sm.apply_plain(C.WORK_PUSH_HEADERS, ["w", {"b": "2"}, None, "y"])
    delivery = sm.apply_plain(C.WORK_CLAIM, ["w", "me", 0])[0]
    assert delivery["item_id"] == item
    sm.apply_plain(C.WORK_ACK, ["w", "me", delivery["delivery_id"]])
    doc = sm.capture()
    assert doc["headers"] == {"work_queues": {"w": [[item + 1, {"b": "2"}]]}}
    again = StateMachine()
    again.restore(doc)
    assert again.work_headers["w"].get(item + 1) == {"b": "2"}


async def test_headers_through_a_client() -> None:
    from tests.client.test_client_cluster import client_of, cluster_with_clients

    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        q: Any = client.queue("orders")
        await q.push("a", headers={"trace": "1"})
        got = await c.node(2).queue("orders").pop_message()
        assert got.headers == {"trace": "1"}
        t: Any = client.topic("news")
        await t.publish("n", headers={"lang": "en"})
        w: Any = client.work_queue("jobs")
        await w.push("j", headers={"k": "v"})
        member = c.node(2).work_queue("jobs")
        delivery = await member.claim("me")
        assert member.headers_of(delivery.item_id) == {"k": "v"}
        mirrored = client.work_queue("jobs")
        mirrored.pending_len()  # the first read starts mirroring the work queue
        await client.barrier()
        assert mirrored.headers_of(delivery.item_id) == {"k": "v"}


async def _transaction_with_headers(tx_of: Any, q: Any, t: Any, w: Any) -> None:
    await t.subscribe("s")
    async with tx_of() as tx:
        tx.push(q, "a", headers={"trace": "q"})
        tx.publish(t, "b", headers={"trace": "t"}, msg_id="m-1")
        tx.push(w, "c", headers={"trace": "w"})
        tx.push(q, "d")
    assert (await q.pop_message()).headers == {"trace": "q"}
    assert (await q.pop_message()).headers == {}
    async with contextlib.aclosing(t.stream_messages("s")) as stream:
        async for m in stream:
            assert (m.value, dict(m.headers)) == ("b", {"trace": "t"})
            break
    delivery = await w.claim("me")
    assert w.headers_of(delivery.item_id) == {"trace": "w"}
    from lazily_queue.transactions import Transaction

    tx2: Transaction = tx_of()
    with pytest.raises(InvalidHeaders):
        tx2.push(q, "x", headers={"k": 1})


async def test_headers_inside_transactions_locally() -> None:
    from lazily_queue import QueueCell, TopicCell, transaction

    await _transaction_with_headers(transaction, QueueCell(), TopicCell(),
                                    WorkQueueCell(clock=lambda: 0.0))


async def test_headers_inside_transactions_on_a_cluster() -> None:
    async with testing.cluster(3) as c:
        node = await c.leader()
        await _transaction_with_headers(node.transaction, node.queue("q"), node.topic("t"),
                                        node.work_queue("w"))

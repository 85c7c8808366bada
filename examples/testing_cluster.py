"""Testing an application on a three-node cluster inside the test process.

    pytest examples/testing_cluster.py        # with pytest-asyncio (asyncio_mode = "auto")
    python examples/testing_cluster.py        # or without pytest
"""

from __future__ import annotations

import asyncio
from typing import Any

from lazily_queue import Node, NoQuorum, testing


class Orders:
    """The application under test: it takes orders on whichever node it runs beside."""

    def __init__(self, node: Node) -> None:
        self.queue = node.queue("orders")

    async def place(self, order: dict[str, Any]) -> None:
        await self.queue.push(order)

    async def take(self) -> Any:
        return await self.queue.pop()


async def test_orders_survive_a_leader_crash() -> None:
    async with testing.cluster(3) as c:
        orders = Orders((await c.followers())[0])
        await orders.place({"id": 1})
        await c.kill((await c.leader()).node_id)  # the leader's process dies
        await c.wait_for_leader()  # the two others elect a new one
        await orders.place({"id": 2})
        assert [await orders.take(), await orders.take()] == [{"id": 1}, {"id": 2}]


async def test_a_cut_off_node_refuses_orders_then_catches_up() -> None:
    async with testing.cluster(3, op_timeout=2.0) as c:
        leader = await c.leader()
        cut_off = Orders(leader)
        await cut_off.place({"id": 1})
        c.isolate(leader.node_id)
        try:
            await cut_off.place({"id": 2})
            raise AssertionError("a minority took an order")
        except NoQuorum:
            pass  # not committed, and the caller is told so
        others = [node_id for node_id in c.ids if node_id != leader.node_id]
        await Orders(await c.wait_for_leader(among=others)).place({"id": 3})
        c.heal()
        await c.settle()  # every node has applied everything committed
        assert [await cut_off.take(), await cut_off.take()] == [{"id": 1}, {"id": 3}]


if __name__ == "__main__":
    asyncio.run(test_orders_survive_a_leader_crash())
    asyncio.run(test_a_cut_off_node_refuses_orders_then_catches_up())
    print("2 passed")

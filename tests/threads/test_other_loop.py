"""A node's or client's cell awaited on another event loop (``asyncio.run`` in a thread)
raises ``ThreadSafetyError`` saying where to call it, sends nothing, and the cell goes on
working on its own loop."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    Credentials,
    QueueCell,
    ThreadSafetyError,
    connect,
    testing,
)
from tests.client.one_member import TOKEN, one_member

OTHER_LOOP = r"runs on another event loop than this call's.*threadsafe.*nothing was sent"


def on_another_loop(call: Callable[[], Awaitable[Any]]) -> BaseException | None:
    """What ``call()`` awaited under a new event loop in this thread raised."""
    async def run() -> None:
        await call()
    try:
        asyncio.run(run())
    except BaseException as exc:  # the test reads what it was
        return exc
    return None


async def assert_refused_elsewhere(orders: QueueCell[int]) -> None:
    for call in (lambda: orders.push(2), orders.pop, lambda: orders.push_many([3, 4])):
        raised = await asyncio.to_thread(on_another_loop, call)
        assert isinstance(raised, ThreadSafetyError), raised
        assert re.search(OTHER_LOOP, str(raised)), raised
    assert [await orders.pop(timeout=5)] == [1]   # nothing the other loop sent applied
    assert orders.len() == 0


async def test_a_node_cell_on_another_loop_is_refused() -> None:
    async with testing.cluster(3) as c:
        orders: QueueCell[int] = (await c.followers())[0].queue("orders")
        await orders.push(1)
        await assert_refused_elsewhere(orders)


async def test_a_client_cell_on_another_loop_is_refused() -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as member, connect(member.listen or "",
                                               Credentials("web", TOKEN)) as client:
        orders: QueueCell[int] = client.queue("orders")
        await orders.push(1)
        await assert_refused_elsewhere(orders)


async def test_a_refused_call_takes_no_cell_of_the_node() -> None:
    """A node's cell called from another loop before its own loop awaited any leaves the
    node's reactive context to the node's loop; a local cell of that context refused
    there names the node and the shared context."""
    async with testing.cluster(3) as c:
        orders: QueueCell[int] = (await c.followers())[0].queue("orders")
        held = orders.ctx.loop
        raised = await asyncio.to_thread(on_another_loop, lambda: orders.push(1))
        assert isinstance(raised, ThreadSafetyError), raised
        assert re.match(r"node \d runs on another event loop", str(raised)), raised
        assert orders.ctx.loop is held
        await orders.push(2)  # the node's loop takes its context
        local: QueueCell[int] = QueueCell(name="local", context=orders.ctx)
        raised = await asyncio.to_thread(on_another_loop, lambda: local.push(3))
        assert isinstance(raised, ThreadSafetyError), raised
        assert re.search(r"\(the loop of node \d\).*node \d takes the default reactive "
                         r"context of the thread that made it", str(raised)), raised
        assert [await orders.pop(timeout=5)] == [2] and local.len() == 0

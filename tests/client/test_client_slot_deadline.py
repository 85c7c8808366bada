"""An op waiting for one of the client's ``max_in_flight`` slots counts its timeout from
the call: at its deadline it fails unsent (``applied`` False), though the ops holding the
slots are still under way."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lazily_queue import connect
from lazily_queue.client import server as server_module
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, one_member

pytestmark = pytest.mark.timeout(60)


async def test_an_op_waiting_for_a_slot_fails_unsent_at_its_own_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    held = asyncio.Event()
    real = server_module.ClientServer._answer_op

    def hold_answer(self: Any, conn: Any, op: Any, result: Any, error: Any) -> None:
        if op.args[-1:] == ["held"]:  # it applied; its answer never comes
            self._release(conn)
            held.set()
            return
        real(self, conn, op, result, error)

    monkeypatch.setattr(server_module.ClientServer, "_answer_op", hold_answer)
    async with one_member() as node:
        client = connect([node.listen or ""], ("web", TOKEN), max_in_flight=1)
        assert isinstance(client, ClusterClient)
        async with client:
            await client.queue("q").push("declared")
            driver = client.session
            holder = asyncio.ensure_future(
                driver.call(ops.QUEUE_PUSH, ["q", "held"], timeout=30))
            await held.wait()  # the only slot is taken until the holder's deadline
            waiter = asyncio.ensure_future(
                driver.call(ops.QUEUE_PUSH, ["q", "waiting"], timeout=0.5))
            done, _ = await asyncio.wait({waiter, holder}, timeout=10,
                                         return_when=asyncio.FIRST_COMPLETED)
            assert done == {waiter}, "the waiting op outlived its timeout"
            with pytest.raises(CommitTimeout, match="was not applied") as failed:
                await waiter
            assert failed.value.applied is False
            assert "max_in_flight" in str(failed.value)
            holder.cancel()
        # The held one applied; the other was never sent.
        assert await node.queue("q").pop_many(10) == ["declared", "held"]

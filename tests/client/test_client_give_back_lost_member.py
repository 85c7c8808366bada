"""A consume-only client's pop whose caller was cancelled after it applied gives its
elements back when its member died and every member it reaches next restarted from a
snapshot taken after the pop (the record of the session's pops travels in snapshots),
and when a member's gate refuses it once (it goes again under its number): every
element pushed is received or still queued."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, ClusterClient, connect, testing
from lazily_queue.client import popped
from lazily_queue.client.batching import PendingOp
from lazily_queue.client.connection import ClientConnection
from lazily_queue.client.server import ClientServer
from lazily_queue.replicated import ops
from lazily_queue.replicated.view import ReadView
from tests.client.member_views import NoPops
from tests.client.one_member import one_member
from tests.transports.transport_helpers import eventually

pytestmark = pytest.mark.timeout(90)

READER = b"token-of-a-consume-only-reader"
ENGINE = dataclasses.replace(testing.FAST_ENGINE, compaction_min_entries=60,
                             compaction_min_time=0.01)


def _hold_first_pop_answer(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """The member never answers the first pop it applies for a client (set once held)."""
    answer_op = ClientServer._answer_op
    held = asyncio.Event()

    def holding(self: ClientServer, conn: ClientConnection, op: PendingOp, result: Any,
                error: BaseException | None) -> None:
        if op.code == ops.QUEUE_POP_STAMPED and not held.is_set():
            held.set()
            self._release(conn)
            return
        answer_op(self, conn, op, result, error)

    monkeypatch.setattr(ClientServer, "_answer_op", holding)
    return held


async def test_a_cancelled_pop_goes_back_when_every_member_restarted_from_a_snapshot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every member the client reaches after the pop restarted from a snapshot taken
    after it: the session's record of the pop came back with the snapshot, and the
    give-back applies."""
    held = _hold_first_pop_answer(monkeypatch)
    prefix = f"memory://give-back-all-restored-{id(tmp_path)}"

    def options(node_id: str) -> testing.NodeOptions:
        grants = [ClientGrant("reader", READER, consume=["jobs"])]
        return {"clients": ClientAccess(grants, listen=f"{prefix}-{node_id}")}

    addresses = [f"{prefix}-{n}" for n in (1, 2, 3)]
    async with testing.cluster(3, data_dir=tmp_path, engine=ENGINE,
                               node_options=options) as c:
        leader = await c.leader()
        for n in range(4):
            await leader.queue("jobs").push(n)
        await c.settle()
        client = connect(addresses, ("reader", READER), ping_interval=0.2, ping_timeout=1.0,
                         prefer_leader=False)
        assert isinstance(client, ClusterClient)
        async with client:
            await client.barrier()
            assert client.member == "1"
            popping = asyncio.create_task(client.queue("jobs").pop())
            await asyncio.wait_for(held.wait(), 10)
            popping.cancel()  # it applied; its answer never came: the caller went away
            with pytest.raises(asyncio.CancelledError):
                await popping
            await c.settle()
            popped_at = max(c.node(n).status()["last_applied"] for n in (2, 3))
            filler = (await c.leader()).queue("filler")
            while min(c.node(n).status()["log_first_index"] for n in (2, 3)) <= popped_at:
                await filler.push("x")  # until both snapshots cover the pop
                await filler.pop()
            for n in (2, 3):
                await c.restart(n)  # from its snapshot, taken after the pop
                await c.settle()
            await c.kill(1)  # the client's member: every member it reaches next restarted
            third = c.node(3)
            await eventually(lambda: third.queue("jobs").len() == 4, 30.0)  # the element back
            assert client.member in ("2", "3")
        await third.barrier()
        # pushed = received (none: the caller went away) + left in the queue
        assert third.queue("jobs").storage.elements() == [0, 1, 2, 3]  # type: ignore[attr-defined]


async def test_a_client_closing_waits_for_the_give_back_of_a_cancelled_pop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The give-back goes again after the member's gate refused it (the member had not
    applied the pop yet, say): a client closing meanwhile waits for it rather than fail
    it with ``ClientClosed``."""
    answer_op = ClientServer._answer_op
    refusal = ClientConnection.state_refusal
    popping: list[asyncio.Task[Any]] = []
    refused = asyncio.Event()

    def cancelling(self: ClientServer, conn: ClientConnection, op: PendingOp, result: Any,
                   error: BaseException | None) -> None:
        if op.code == ops.QUEUE_POP_STAMPED and popping:
            popping.pop().cancel()  # it applied; the caller goes away before its answer
        answer_op(self, conn, op, result, error)

    def refusing(self: ClientConnection, op: PendingOp, view: ReadView) -> Any:
        if op.code == ops.QUEUE_UNPOP_STAMPED and not refused.is_set():
            refused.set()
            return refusal(self, op, NoPops(view))  # type: ignore[arg-type]
        return refusal(self, op, view)

    monkeypatch.setattr(ClientServer, "_answer_op", cancelling)
    monkeypatch.setattr(ClientConnection, "state_refusal", refusing)
    monkeypatch.setattr(popped, "REFUSED_PAUSE", 1.0)  # past the session's end
    access = ClientAccess([ClientGrant("reader", READER, consume=["jobs"])])
    async with one_member(access) as node:
        for n in range(3):
            await node.queue("jobs").push(n)
        async with connect([node.listen or ""], ("reader", READER)) as client:
            task = asyncio.create_task(client.queue("jobs").pop())
            popping.append(task)
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(refused.wait(), 10)
        assert node.queue("jobs").storage.elements() == [0, 1, 2]  # type: ignore[attr-defined]



async def test_an_iterations_rest_refused_once_at_the_gate_goes_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What an ``async for`` took and did not hand out goes back as a cancelled pop's
    does: refused once at the member's gate, it goes again under its number."""
    refusal = ClientConnection.state_refusal
    refused: list[PendingOp] = []

    def refusing(self: ClientConnection, op: PendingOp, view: ReadView) -> Any:
        if op.code == ops.QUEUE_UNPOP_STAMPED and not refused:
            refused.append(op)
            return refusal(self, op, NoPops(view))  # type: ignore[arg-type]
        return refusal(self, op, view)

    monkeypatch.setattr(ClientConnection, "state_refusal", refusing)
    access = ClientAccess([ClientGrant("reader", READER, consume=["jobs"])])
    async with one_member(access) as node:
        for n in range(4):
            await node.queue("jobs").push(n)
        async with connect([node.listen or ""], ("reader", READER)) as client:
            received = []
            async for value in client.queue("jobs").items(prefetch=4):
                received.append(value)
                break
        assert len(refused) == 1
        assert received + node.queue("jobs").storage.elements() == [0, 1, 2, 3]  # type: ignore[attr-defined]

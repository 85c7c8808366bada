"""``POPPED_CHECKING``: a member that becomes leader while the state is not checking
proposes it before anything else of its term (whatever its maintenance interval), so a
fresh cluster checks give-backs from before its first pop; no client may send it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue import ClientAccess, ClientGrant, Node, connect
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-every-permission"
READER = b"token-of-a-consume-only-reader"


async def test_a_fresh_member_checks_before_its_first_client_op(short_tmp: Path) -> None:
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", maintenance_interval=None)
    async with node:
        await node.wait_for_leader()
        await node.barrier()  # after the leader's first op in the log
        assert node.view.popped_checking


@pytest.mark.parametrize("interval", [0.05, None], ids=["maintenance", "no-maintenance"])
async def test_pops_right_after_the_first_election_can_be_given_back(
        short_tmp: Path, interval: float | None) -> None:
    """Two consume-only sessions pop as soon as a fresh member leads; once the member is
    checking (its maintenance would have begun it by then), each gives its element back,
    and both go back: no pop came before checking began."""
    access = ClientAccess([ClientGrant("reader", READER, consume=["jobs"])])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access, maintenance_interval=interval)
    async with node:
        await node.wait_for_leader()
        assert node.listen is not None
        await node.queue("jobs").push_many(["a", "b"])
        async with connect([node.listen], ("reader", READER)) as first, \
                connect([node.listen], ("reader", READER)) as second:
            mine = await first.queue("jobs").pop_messages(1)
            theirs = await second.queue("jobs").pop_messages(1)
            for _ in range(50):  # a maintenance round or more
                if node.view.popped_checking and interval is not None:
                    break
                await asyncio.sleep(0.01)
            await first.queue("jobs").give_back(mine)
            await second.queue("jobs").give_back(theirs)
        await node.barrier()
        assert sorted(await node.queue("jobs").pop_many(2)) == ["a", "b"]


def test_no_grant_opens_the_op_to_a_client() -> None:
    everything = ClientGrant("ops", TOKEN, produce=["*"], consume=["*"], admin=["*"])
    refusal = everything.refusal(ops.POPPED_CHECKING, "q")
    assert refusal is not None and "not open to clients" in refusal


async def test_a_client_sending_the_op_is_refused(short_tmp: Path) -> None:
    access = ClientAccess([ClientGrant("all", TOKEN, produce=["*"], consume=["*"],
                                       admin=["*"])])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access, maintenance_interval=None)
    async with node:
        await node.wait_for_leader()
        assert node.listen is not None
        stream = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=TOKEN,
                                                    credential="all"))
        try:
            await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("all")]))
            assert cbor2.loads(await stream.receive())[1] == P.OK
            await node.barrier()
            applied = node.view.applied_ops
            for rid, args in ((2, []), (3, ["q"])):
                await stream.send(cbor2.dumps([rid, P.OP, rid, rid - 1, ops.POPPED_CHECKING,
                                               args, 1000]))
                answer = cbor2.loads(await stream.receive())
                assert answer[:2] == [rid, P.ERROR] and answer[2] == [
                    "permission", "this operation is not open to clients"], answer
        finally:
            await stream.aclose()
        await node.barrier()
        assert node.view.applied_ops == applied + 1  # the barrier alone

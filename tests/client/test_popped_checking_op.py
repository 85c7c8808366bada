"""``POPPED_CHECKING``: the leader's maintenance starts checked give-backs' checking as it
first leads, before clients use them, and no client may send the op."""

from __future__ import annotations

import asyncio
from pathlib import Path

import cbor2
from lazily_transports import LinkConfig, dial

from lazily_queue import ClientAccess, ClientGrant, Node, testing
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id

TOKEN = b"token-of-every-permission"


async def test_a_fresh_member_starts_checking_soon_after_its_first_election(
        short_tmp: Path) -> None:
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", maintenance_interval=0.05)
    async with node:
        await node.wait_for_leader()
        for _ in range(100):
            if node.view.popped_checking:
                break
            await asyncio.sleep(0.01)
        assert node.view.popped_checking


async def test_a_test_cluster_starts_with_its_leader_checking() -> None:
    async with testing.cluster(3) as c:
        assert any(n.view.popped_checking for n in c.running)


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
            for rid, args in ((2, []), (3, ["q"])):
                await stream.send(cbor2.dumps([rid, P.OP, rid, rid - 1, ops.POPPED_CHECKING,
                                               args, 1000]))
                answer = cbor2.loads(await stream.receive())
                assert answer[:2] == [rid, P.ERROR] and answer[2] == [
                    "permission", "this operation is not open to clients"], answer
        finally:
            await stream.aclose()
        await node.barrier()
        assert not node.view.popped_checking

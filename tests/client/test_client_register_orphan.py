"""A registration whose proposal outlived its deadline (its answer is an error, the
client registers again elsewhere) but still applied later is ended by the member that
proposed it: no client learned its id."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue.client import protocol as P
from lazily_queue.replicated.session_register import REGISTERED_BASE
from tests.client.test_client_cluster import TOKEN, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_registration_applied_after_its_deadline_is_ended() -> None:
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower = next(n for n in c.running if n.node_id != leader)
        address = next(a for a in addresses if a.endswith(f"-{follower.node_id}"))
        stream = await dial(address, LinkConfig(peer_id=0, session_id="lazily-client",
                                                secret=TOKEN, credential="web"))
        await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, 0]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
        c.cut_one_way(leader, follower.node_id)  # the follower hears nothing committed
        await stream.send(cbor2.dumps([2, P.REGISTER, 500]))
        answer = cbor2.loads(await asyncio.wait_for(stream.receive(), 10))
        assert answer[:2] == [2, P.ERROR], answer  # its deadline passed
        c.heal()
        await c.settle()
        for _ in range(250):  # the late result ends the session it registered
            if not _held(c):
                break
            await asyncio.sleep(0.02)
        assert {node.view._sm.registrations for node in c.running} == {1}
        assert _held(c) == set()
        await stream.aclose()


def _held(c: Any) -> set[int]:
    """The registered client sessions some member holds."""
    return {sid for node in c.running for sid in node.view._sm.sessions
            if sid >= REGISTERED_BASE}

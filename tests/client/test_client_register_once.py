"""A client registers its session once: it does not register at a follower it leaves for
the leader, nor leave a follower while a registration asked there is unanswered (the
session is the cluster's, valid at every member: it goes along); and a member whose
client left before the answer to its registration ends the session it registered."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue.client import leader_seeking
from lazily_queue.client import protocol as P
from lazily_queue.client import server as server_module
from lazily_queue.replicated import ops
from lazily_queue.replicated.session_register import REGISTERED_BASE
from tests.client.one_member import TOKEN as ONE_TOKEN
from tests.client.one_member import one_member
from tests.client.test_client_cluster import (
    client_of,
    cluster_with_clients,
    first_hello_knows_no_leader,
    push_across_the_move,
)

pytestmark = pytest.mark.timeout(60)


def _registrations(c: Any) -> set[int]:
    return {node.view._sm.registrations for node in c.running}


async def test_a_client_starting_at_a_follower_registers_at_the_leader_only() -> None:
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower_first = sorted(addresses, key=lambda a: a.endswith(f"-{leader}"))
        client = client_of(follower_first)
        starting = asyncio.ensure_future(client.start())
        await asyncio.sleep(0)
        await client.queue("q").push(1)  # waits while the client links to a follower
        await starting
        assert client.member == leader
        await client.barrier()
        assert _registrations(c) == {1}
        await client.close()


async def test_a_client_moving_to_the_leader_takes_the_session_it_was_registering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The follower knew no leader at the hello: the client registers there; a later
    hello names the leader before the registration's answer came. The client waits for
    it, and moves with the session."""
    first_hello_knows_no_leader(monkeypatch)
    held: list[int] = []
    real_answer = server_module.ClientServer._answer

    def answer_the_first_registration_late(self: Any, conn: Any, rid: int, result: Any,
                                           error: Any) -> None:
        if not held and type(result) is int and result >= REGISTERED_BASE:
            held.append(result)  # applied; its answer comes after the next hellos
            asyncio.get_running_loop().call_later(0.5, real_answer, self, conn, rid, result,
                                                  error)
            return
        real_answer(self, conn, rid, result, error)

    monkeypatch.setattr(server_module.ClientServer, "_answer",
                        answer_the_first_registration_late)
    monkeypatch.setattr(leader_seeking, "LEADER_RETRY", 0.05)
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        follower_first = sorted(addresses, key=lambda a: a.endswith(f"-{leader}"))
        async with client_of(follower_first) as client:
            await push_across_the_move(client, leader)
            assert held == [client.session.id]
            assert _registrations(c) == {1}
            assert await client.queue("q").pop_many(5) == [1, 2]


async def test_a_registration_whose_client_left_before_its_answer_is_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member that reads a client's ``REGISTER`` late (it was paused; the client gave
    up on it and registers elsewhere) applies it after the link closed: it ends that
    session, which no client will use."""
    real_propose = server_module.ClientServer._propose
    waiting: list[asyncio.Future[None]] = []

    def answer_once_the_link_closed(self: Any, conn: Any, rid: int, code: int,
                                    args: list[Any], timeout: float,
                                    answer: Any = None, **options: Any) -> bool:
        if code != ops.SESSION_REGISTER:
            return real_propose(self, conn, rid, code, args, timeout, answer, **options)

        def late(conn: Any, rid: int, result: Any, error: Any) -> None:
            async def when_closed() -> None:
                while not conn.closed:  # noqa: ASYNC110 - until the client left
                    await asyncio.sleep(0.01)
                answer(conn, rid, result, error)

            waiting.append(asyncio.ensure_future(when_closed()))

        return real_propose(self, conn, rid, code, args, timeout, late, **options)

    monkeypatch.setattr(server_module.ClientServer, "_propose", answer_once_the_link_closed)
    async with one_member() as node:
        sm = node.view._sm
        stream = await dial(node.listen or "", LinkConfig(
            peer_id=0, session_id="lazily-client", secret=ONE_TOKEN, credential="web"))
        await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, 0]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
        await stream.send(cbor2.dumps([2, P.REGISTER, 5000]))
        for _ in range(200):
            if sm.registrations:
                break
            await asyncio.sleep(0.01)
        (sid,) = [s for s in sm.sessions if s >= REGISTERED_BASE]
        await stream.aclose()
        for _ in range(200):
            if sid in sm.ended:
                break
            await asyncio.sleep(0.01)
        assert sid in sm.ended and sid not in sm.sessions

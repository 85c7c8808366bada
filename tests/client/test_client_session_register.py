"""A client's session is registered by the cluster (``REGISTER``); an operation retried
after the cluster forgot its session is refused, never applied a second time: the
client fails it with ``SessionForgotten`` and goes on under a new session."""

from __future__ import annotations

import asyncio
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue import SessionForgotten, connect
from lazily_queue.client import protocol as P
from lazily_queue.client import server as server_module
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.replicated import ops
from lazily_queue.replicated import state_machine as sm_module
from lazily_queue.replicated.client_sessions import new_session_id, owner_of, owner_tag
from lazily_queue.replicated.results import decode_result
from lazily_queue.replicated.session_register import REGISTERED_BASE
from tests.client.one_member import TOKEN, one_member
from tests.client.one_member import answers as read_answers

pytestmark = pytest.mark.timeout(60)


def _client(address: str) -> ClusterClient:
    client = connect([address], ("web", TOKEN), ping_interval=0.2, ping_timeout=1.0)
    assert isinstance(client, ClusterClient)
    return client


async def _others_push_it_out(address: str) -> None:
    """Two more clients of the same name: with two client sessions kept at most, the
    client's own least recently seen session is given up."""
    for n in range(2):
        other = _client(address)
        await other.start()
        await other.queue("other").push(n)
        other._link.close("left without ending its session")  # type: ignore[union-attr]
        await other._unlink()


async def test_a_retry_after_the_cluster_forgot_its_session_fails_and_applies_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    lost: list[Any] = []
    answer_lost = asyncio.Event()
    real = server_module.ClientServer._answer_op

    def lose_answer(self: Any, conn: Any, op: Any, result: Any, error: Any) -> None:
        if not lost and op.args[-1:] == ["once"]:  # it applied; its answer is lost
            lost.append(conn)
            answer_lost.set()
            self._release(conn)
            return
        real(self, conn, op, result, error)

    monkeypatch.setattr(server_module.ClientServer, "_answer_op", lose_answer)
    async with one_member() as node, _client(node.listen or "") as client:
        q = client.queue("q")
        await q.push("declared")
        first = client.session.id
        assert first >= REGISTERED_BASE and owner_of(first) == owner_tag("web")
        push = asyncio.ensure_future(q.push("once"))
        await answer_lost.wait()
        await _others_push_it_out(node.listen or "")
        assert first not in node.view._sm.sessions
        lost[0].close()  # the client links again and retries under its forgotten session
        with pytest.raises(SessionForgotten, match="outcome is unknown") as failed:
            await push
        assert failed.value.applied is None
        await q.push("after")  # under a new session, registered at once
        assert client.session.id not in (0, first)
        await client.barrier()
        assert await node.queue("q").pop_many(10) == ["declared", "once", "after"]


async def test_an_op_after_the_cluster_forgot_an_idle_session_goes_under_a_new_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    async with one_member() as node, _client(node.listen or "") as client:
        q = client.queue("q")
        await q.push(1)
        first = client.session.id
        await _others_push_it_out(node.listen or "")
        await q.push(2)  # refused under the forgotten session, sent again: no error
        assert client.session.id not in (0, first)
        assert await node.queue("q").pop_many(10) == [1, 2]


async def test_ops_in_flight_when_the_cluster_forgot_the_session_say_they_did_not_apply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first of them is refused and sent again under a new session; the others, sent
    on the same link, wait for their own answers there: each refused under the forgotten
    session, never applied, fails saying so (not that it may have applied)."""
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    async with one_member() as node, _client(node.listen or "") as client:
        q = client.queue("q")
        await q.push(1)
        first = client.session.id
        await _others_push_it_out(node.listen or "")
        outcomes = await asyncio.gather(*(q.push(n) for n in (2, 3, 4)),
                                        return_exceptions=True)
        assert client.session.id not in (0, first)
        assert outcomes[0] is None  # refused, sent again under the new session
        for outcome in outcomes[1:]:
            assert isinstance(outcome, SessionForgotten) and outcome.applied is False, \
                repr(outcome)
        assert await node.queue("q").pop_many(10) == [1, 2]


async def test_a_client_registers_its_session_at_its_first_op_only() -> None:
    async with one_member() as node:
        sm = node.view._sm
        async with _client(node.listen or "") as client:
            assert client.session.id == 0 and sm.registrations == 0
            await client.queue("q").push(1)
            await client.queue("q").push(2)
            assert sm.registrations == 1 and client.session.id in sm.sessions


async def _linked(address: str, version: int, session: int) -> Any:
    stream = await dial(address, LinkConfig(peer_id=0, session_id="lazily-client",
                                            secret=TOKEN, credential="web"))
    await stream.send(cbor2.dumps([1, P.HELLO, version, session]))
    answer = cbor2.loads(await stream.receive())
    assert answer[1] == P.OK, answer
    return stream


async def _ask(stream: Any, frame: list[Any]) -> list[Any]:
    await stream.send(cbor2.dumps(frame))
    answer: list[Any] = cbor2.loads(await stream.receive())
    return answer


async def test_an_older_client_still_chooses_its_session_and_a_newer_one_registers() -> None:
    async with one_member() as node:
        address = node.listen or ""
        older = await _linked(address, 4, new_session_id("web"))
        assert (await _ask(older, [2, P.OP, 1, 1, ops.QUEUE_DECLARE, ["q", None], 5000]))[1] \
            == P.OK
        refused = await _ask(older, [3, P.REGISTER, 5000])
        assert refused[1] == P.ERROR and "client protocol 5" in refused[2][1]
        await older.aclose()
        newer = await _linked(address, P.VERSION, 0)
        refused = await _ask(newer, [2, P.OP, 1, 1, ops.QUEUE_PUSH, ["q", 1], 5000])
        assert refused[1] == P.ERROR and "register a session (REGISTER)" in refused[2][1]
        registered = await _ask(newer, [3, P.REGISTER, 5000])
        assert registered[1] == P.OK and registered[2][1] >= REGISTERED_BASE
        assert (await _ask(newer, [4, P.OP, 1, 1, ops.QUEUE_PUSH, ["q", 1], 5000]))[1] == P.OK
        assert registered[2][1] in node.view._sm.sessions
        await newer.aclose()
        forged = await dial(address, LinkConfig(peer_id=0, session_id="lazily-client",
                                                secret=TOKEN, credential="web"))
        await forged.send(cbor2.dumps([1, P.HELLO, 4, REGISTERED_BASE + 1]))
        answer = cbor2.loads(await forged.receive())
        assert answer[1] == P.ERROR and "a client session id is an int" in answer[2][1]
        await forged.aclose()


async def test_a_link_registers_one_session_until_the_cluster_forgot_it() -> None:
    async with one_member() as node:
        sm = node.view._sm
        stream = await _linked(node.listen or "", P.VERSION, 0)
        await stream.send(cbor2.dumps([0, P.BATCH, [[2, P.REGISTER, 5000],
                                                    [3, P.REGISTER, 5000]]]))
        answers = {answer[0]: answer for answer in await read_answers(stream, 2)}
        assert answers[2][1] == P.OK and answers[2][2][1] >= REGISTERED_BASE
        assert answers[3][1] == P.ERROR and answers[3][2][0] == "refused"
        assert "registering a session already" in answers[3][2][1]
        again = await _ask(stream, [4, P.REGISTER, 5000])
        assert again[1] == P.ERROR and "one session at a time" in again[2][1]
        assert sm.registrations == 1
        # A session the cluster does not hold: its op is refused, then the link registers.
        held = REGISTERED_BASE + (owner_tag("web") << 46) + 12345
        await stream.send(cbor2.dumps([5, P.HELLO, P.VERSION, held]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
        refused = await _ask(stream, [6, P.REGISTER, 5000])
        assert refused[1] == P.ERROR and "one session at a time" in refused[2][1]
        unknown = await _ask(stream, [7, P.OP, 1, 1, ops.QUEUE_DECLARE, ["q", None], 5000])
        assert unknown[1] == P.OK and decode_result(unknown[2]).code == "session_unknown"
        registered = await _ask(stream, [8, P.REGISTER, 5000])
        assert registered[1] == P.OK and registered[2][1] in sm.sessions
        assert sm.registrations == 2
        assert (await _ask(stream, [9, P.OP, 1, 1, ops.QUEUE_DECLARE, ["q", None], 5000]))[1] \
            == P.OK
        await stream.aclose()

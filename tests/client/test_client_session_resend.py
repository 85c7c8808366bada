"""Ops of a session the cluster forgot: one whose request this process still held when
the refusal came (the member never read it, and refuses it under the forgotten id if it
ever does) goes again under the new session; one whose request had left fails with
``SessionForgotten``, its outcome unknown. Every op applies at most once."""

from __future__ import annotations

import asyncio

import pytest

from lazily_queue import ClientAccess, ClientGrant, OperationFailed, SessionForgotten
from lazily_queue.replicated import state_machine as sm_module
from tests.client.one_member import TOKEN, one_member
from tests.client.test_client_session_register import _client, _others_push_it_out

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

#: Pushes of this many bytes each, more in all than the socket's and the link's buffers.
SIZE, COUNT = 900_000, 12


async def test_held_requests_of_a_forgotten_session_go_again_under_the_new_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sm_module, "MAX_CLIENT_SESSIONS", 2)
    # One request in flight per link: the member reads no further until it answers.
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
                          max_in_flight=1)
    async with one_member(access) as node, _client(node.listen or "") as client:
        q = client.queue("q")
        await q.push(b"declared")
        first = client.session.id
        await _others_push_it_out(node.listen or "")
        values = [b"small"] + [bytes([n]) * SIZE for n in range(COUNT)]
        outcomes = await asyncio.gather(*(q.push(v) for v in values), return_exceptions=True)
        assert client.session.id not in (0, first)
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert all(isinstance(o, SessionForgotten) and o.applied is None for o in failed), \
            [repr(o) for o in failed]
        resent = [v for v, o in zip(values, outcomes, strict=True)
                  if not isinstance(o, BaseException)]
        assert b"small" in resent  # refused unapplied, then sent again
        assert len(resent) > 1, "every held request failed as if it had left"
        popped: list[object] = []
        while len(popped) < len(resent) + 1:  # a take stops at 4 MiB of elements
            popped += await node.queue("q").pop_many(len(values) + 1)
        assert popped == [b"declared", *resent]  # each once, in order; the failed nowhere
        assert not any(isinstance(o, OperationFailed) and o.applied is False
                       for o in outcomes)

"""A consume-only client's give-back whose answer was lost is retried under its sequence
number on a new link: a member that applied it answers the retry as applied (from the
client's session); one that has not proposes it (its session popped those elements),
and it applies once however many attempts apply. A member that does not hold the pop
(not applied yet, or it installed a snapshot since) refuses it; the client sends it
again a few times, and refused each time reports its outcome unknown, never that it
was not applied, as the first attempt may still apply."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, Message, OperationFailed, QueueCell, connect
from lazily_queue.client import ClusterClient, popped
from lazily_queue.client import protocol as P
from lazily_queue.client.batching import PendingOp
from lazily_queue.client.connection import ClientConnection
from lazily_queue.client.server import ClientServer
from lazily_queue.node import Node
from lazily_queue.replicated import ops
from lazily_queue.replicated.view import ReadView
from tests.client.member_views import NoPops
from tests.client.one_member import one_member

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-a-consume-only-reader"


def _client(node: Node) -> ClusterClient:
    client = connect([node.listen or ""], ("reader", TOKEN), ping_interval=0.2,
                     ping_timeout=1.0)
    assert isinstance(client, ClusterClient)
    return client


ACCESS = ClientAccess([ClientGrant("reader", TOKEN, consume=["jobs"])])


@contextlib.asynccontextmanager
async def _took_three(node: Node) -> AsyncIterator[tuple[QueueCell[Any], list[Message[Any]]]]:
    """Queue "jobs" of ``node`` given 0, 1 and 2, all three popped by a consume-only
    client: its queue and the messages."""
    for n in range(3):
        await node.queue("jobs").push(n)
    async with _client(node) as client:
        jobs = client.queue("jobs")
        yield jobs, await jobs.pop_messages(3)


async def test_a_retried_give_back_that_applied_is_answered_as_applied(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answer_op = ClientServer._answer_op
    lost: list[Any] = []

    def losing(self: ClientServer, conn: ClientConnection, op: PendingOp, result: Any,
               error: BaseException | None) -> None:
        if op.code == ops.QUEUE_UNPOP_STAMPED_CHECKED and not lost:
            lost.append(result)  # applied; the link ends before its answer leaves
            self._release(conn)
            conn.close()
            return
        answer_op(self, conn, op, result, error)

    monkeypatch.setattr(ClientServer, "_answer_op", losing)
    async with one_member(ACCESS) as node:
        async with _took_three(node) as (jobs, taken):
            assert [m.value for m in taken] == [0, 1, 2]
            try:
                await jobs.give_back(taken[1:])
            except (P.PermissionDenied, OperationFailed) as exc:
                assert getattr(exc, "applied", None) is not False
                pytest.fail(f"the retried give-back, applied, was answered: {exc!r}")
        assert lost == [None]
        await node.barrier()
        assert await node.queue("jobs").pop_many(3) == [1, 2]


@pytest.mark.parametrize("refused_once", [False, True], ids=["admitted", "refused-once"])
async def test_a_give_back_retried_before_its_first_attempt_applied_applies_once(
        monkeypatch: pytest.MonkeyPatch, refused_once: bool) -> None:
    """The retry goes on the next link. With ``refused_once`` the member has not applied
    the pop yet (a new leader before it applied its predecessor's entries) and refuses
    it at its gate; sent again under its number, it applies once, and the caller learns
    it did."""
    held = _hold_first_give_back(monkeypatch)
    if refused_once:
        _forget_pops(monkeypatch, reads=(2,))
    async with one_member(ACCESS) as node:
        async with _took_three(node) as (jobs, taken):
            await jobs.give_back(taken[1:])
            [(session, op)] = held
            assert session is not None
            _, applying = node.driver.propose(
                ops.CLIENT_OP, [session, op.seq, op.floor, op.code, *op.args], timeout=5.0)
            assert await applying is None  # the first attempt: answered from the session
        assert await node.queue("jobs").pop_many(3) == [1, 2]


async def test_a_give_back_refused_on_retry_before_its_first_attempt_applied_is_unknown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    held = _hold_first_give_back(monkeypatch)
    _forget_pops(monkeypatch)
    monkeypatch.setattr(popped, "REFUSED_TRIES", 2)  # refused each time it goes again
    async with one_member(ACCESS) as node:
        async with _took_three(node) as (jobs, taken):
            with pytest.raises(OperationFailed, match="its outcome is unknown") as failed:
                await jobs.give_back(taken[1:])
            assert failed.value.applied is None
            assert isinstance(failed.value.__cause__, P.PermissionDenied)
            [(session, op)] = held
            assert session is not None
            _, applying = node.driver.propose(
                ops.CLIENT_OP, [session, op.seq, op.floor, op.code, *op.args], timeout=5.0)
            assert await applying is None  # the first attempt applies after all
        assert await node.queue("jobs").pop_many(3) == [1, 2]


async def test_a_refused_give_back_waits_out_its_pauses_across_new_links(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused at the gate (a member restarted that has not applied the pop yet), the
    retry goes again only after each pause, though every second refusal leaves the link
    and a new one comes up at once: it does not spend its tries at the pace of links
    (a whole cluster SIGKILLed lost a give-back so, refused 8 times within 1.2 s by the
    first member up), and applies once the member admits it."""
    held = _hold_first_give_back(monkeypatch)
    read = _forget_pops(monkeypatch, reads=(2, 3, 4, 5, 6))
    async with one_member(ACCESS) as node:
        async with _took_three(node) as (jobs, taken):
            await jobs.give_back(taken[1:])
        assert len(held) == 1 and len(read) == 7
        gaps = [later - earlier for earlier, later in itertools.pairwise(read[1:])]
        pauses = [popped.REFUSED_PAUSE * 2 ** k for k in range(5)]
        assert all(gap >= 0.9 * pause for gap, pause in zip(gaps, pauses, strict=True)), gaps
        assert await node.queue("jobs").pop_many(3) == [1, 2]


async def test_an_iteration_whose_give_back_is_unknown_does_not_log_its_rest_lost(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The rest of an iteration goes back as a cancelled pop's does: refused at the gate,
    it goes again under its number; once the session gives up on it, its outcome is
    unknown (the first attempt may yet apply), never reported lost."""
    held = _hold_first_give_back(monkeypatch)
    _forget_pops(monkeypatch)
    monkeypatch.setattr(popped, "REFUSED_TRIES", 2)
    async with one_member(ACCESS) as node:
        for n in range(3):
            await node.queue("jobs").push(n)
        async with _client(node) as client:
            async for value in client.queue("jobs").items(prefetch=3):
                assert value == 0
                break
        assert len(held) == 1
    said = [r.getMessage() for r in caplog.records if "undelivered" in r.getMessage()
            or "could not be put back" in r.getMessage()]
    assert len(said) == 1, said
    assert said[0].startswith("queue 'jobs': the give-back of 2 undelivered element(s) has "
                              "an unknown outcome (")
    assert said[0].endswith("it may yet apply under its number, never twice")



def _forget_pops(monkeypatch: pytest.MonkeyPatch, reads: tuple[int, ...] | None = None
                 ) -> list[float]:
    """The member judges the give-backs it reads (the ``reads``-th ones, counting from 1;
    ``None``: every one after the first) as holding no pops; returns when it read each
    (``time.monotonic()``)."""
    refusal = ClientConnection.state_refusal
    read: list[float] = []

    def forgetting(self: ClientConnection, op: PendingOp, view: ReadView) -> Any:
        if op.code == ops.QUEUE_UNPOP_STAMPED:
            read.append(time.monotonic())
            if len(read) > 1 if reads is None else len(read) in reads:
                return refusal(self, op, NoPops(view))  # type: ignore[arg-type]
        return refusal(self, op, view)

    monkeypatch.setattr(ClientConnection, "state_refusal", forgetting)
    return read


def _hold_first_give_back(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int | None, PendingOp]]:
    """The member keeps the first give-back it admits from being proposed (held here with
    its session) and closes that link: the client never hears its answer."""
    flush_ops = ClientServer._flush_ops
    held: list[tuple[int | None, PendingOp]] = []

    def holding(self: ClientServer, conn: ClientConnection) -> None:
        first = next((op for op in conn.ops if op.code == ops.QUEUE_UNPOP_STAMPED_CHECKED), None)
        if first is not None and not held:
            held.append((conn.session, first))
            conn.ops.remove(first)
            conn.close()
        flush_ops(self, conn)

    monkeypatch.setattr(ClientServer, "_flush_ops", holding)
    return held

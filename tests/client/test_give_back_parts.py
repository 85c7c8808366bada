"""Elements taken together may weigh more than one operation carries (a take is held to
what its session keeps, an operation to one message and a command's room). Giving them
back, explicitly or as an iteration's prefetched rest, goes in parts, the last first, so
they stand at the head in their order under their ids; before, the give-back was refused
``MessageTooLarge`` and a consume-only client (or an iteration's rest) lost them."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, MessageTooLarge, connect
from lazily_queue.core import ids
from lazily_queue.raft.errors import NoQuorum
from lazily_queue.replicated import ops as C
from lazily_queue.storage.give_back_parts import give_back_parts
from tests.client.one_member import one_member

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-a-consume-only-reader"
BIG = 450_000  # three are over one operation's 1 MiB, two are not


def _encode_under(limit: int) -> Any:
    def encode(code: int, args: list[Any]) -> bytes:
        size = sum(len(v) for v in args[1])
        if size > limit:
            raise MessageTooLarge(f"{size} over {limit}", size=size, limit=limit)
        return b""
    return encode


def test_parts_each_fit_and_together_are_the_give_back_in_fifo_order() -> None:
    values = [bytes([i]) * 10 for i in range(7)]
    runs = [[100, 3, 5], [110, 4, 6]]
    headers = [[101, {"a": "1"}], [112, {"b": "2"}]]
    parts = give_back_parts("q", values, runs, headers, _encode_under(25))
    assert all(sum(len(v) for v in args[1]) <= 25 for _, args in parts)
    assert [v for _, args in parts for v in args[1]] == values
    assert [i for _, args in parts for i in ids.expand(args[2])] == list(ids.expand(runs))
    got_headers = [h for code, args in parts if code == C.QUEUE_UNPOP_HEADERS for h in args[3]]
    assert got_headers == headers
    for code, args in parts:  # a part without headers is a plain stamped give-back
        assert code == (C.QUEUE_UNPOP_HEADERS if len(args) == 4 else C.QUEUE_UNPOP_STAMPED)
        assert len(args[1]) == ids.covered(args[2])
    assert give_back_parts("q", values, runs, None, _encode_under(1000)) == [
        (C.QUEUE_UNPOP_STAMPED, ["q", values, runs])]
    with pytest.raises(MessageTooLarge):
        give_back_parts("q", values, runs, None, _encode_under(5))


async def _held(queue: Any, n: int) -> list[tuple[int, int]]:
    messages = await queue.pop_messages(n)
    return [(m.id, m.value[0]) for m in messages]


async def test_a_member_gives_back_more_than_one_operation_carries() -> None:
    async with one_member() as node:
        q = node.queue("big")
        await q.push_many([bytes([i]) * BIG for i in range(6)])
        taken = await q.pop_messages(3)
        await q.give_back(taken)
        assert await _held(q, 6) == [(i, i) for i in range(6)]


async def test_a_consume_only_client_gives_back_and_returns_a_prefetched_rest() -> None:
    access = ClientAccess([ClientGrant("reader", TOKEN, consume=["big"])])
    async with one_member(access) as node:
        await node.queue("big").push_many([bytes([i]) * BIG for i in range(6)])
        async with connect([node.listen or ""], ("reader", TOKEN)) as client:
            q = client.queue("big")
            taken = await q.pop_messages(3)
            await q.give_back(taken)  # refused MessageTooLarge before, and nothing kept
            async with contextlib.aclosing(q.messages(prefetch=4)) as it:
                async for m in it:
                    assert (m.id, m.value[0]) == (0, 0)
                    break  # 1, 2 and 3 (1.35 MB) go back as the iteration ends
        assert await _held(node.queue("big"), 5) == [(i, i) for i in range(1, 6)]


async def test_a_part_failing_after_others_applied_says_how_many_are_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with one_member() as node:
        q = node.queue("big")
        await q.push_many([bytes([i]) * BIG for i in range(4)])
        taken = await q.pop_messages(4)
        storage: Any = q._storage
        call = storage._call
        calls: list[int] = []

        async def second_fails(code: int, args: list[Any], timeout: Any) -> Any:
            calls.append(len(args[1]))
            if len(calls) == 2:
                raise MessageTooLarge("refused", size=None, limit=0)
            return await call(code, args, timeout)

        monkeypatch.setattr(storage, "_call", second_fails)
        with pytest.raises(MessageTooLarge) as failed:
            await q.give_back(taken)
        assert calls == [2, 2]
        assert failed.value.__notes__ == [
            "the give-back went in 2 parts, the last first: the last 2 of its 4 elements "
            "are back at the head, the others not"]
        monkeypatch.undo()
        assert await _held(q, 2) == [(2, 2), (3, 3)]


def test_the_copies_of_one_id_go_back_in_one_part() -> None:
    values = [bytes([i]) * 10 for i in range(4)]
    runs = [[100, 2, 5], [101, 2, 5]]  # 100, 101, 101, 102: 101 twice
    parts = give_back_parts("q", values, runs, None, _encode_under(25))
    assert [list(ids.expand(args[2])) for _, args in parts] == [
        [(100, 5)], [(101, 5), (101, 5)], [(102, 5)]]
    alone = give_back_parts("q", values[1:3], [[101, 1, 5], [101, 1, 5]], None,
                            _encode_under(10))  # too large together: cut in the middle
    assert [len(args[1]) for _, args in alone] == [1, 1]


async def test_a_rest_in_parts_keeps_its_order_when_an_attempt_fails_without_applying(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with one_member() as node:
        q = node.queue("big")
        await q.push_many([bytes([i]) * BIG for i in range(4)])
        taken = await node.driver.call(C.QUEUE_POP_STAMPED, ["big", 4], timeout=5.0)
        storage: Any = q._storage
        propose = storage._driver.propose
        parts: list[int] = []

        def last_part_fails_once(code: int, args: list[Any], **options: Any) -> Any:
            parts.append(len(args[1]))
            if len(parts) == 1:  # the last part's first attempt: no quorum, not applied
                raise NoQuorum("no majority just now", applied=False)
            return propose(code, args, **options)

        monkeypatch.setattr(storage._driver, "propose", last_part_fails_once)
        await asyncio.wait(storage._return(taken[0], taken[1], None), timeout=10)
        monkeypatch.undo()
        assert parts == [2, 2, 2]  # the last part twice, then the first
        assert await _held(q, 4) == [(i, i) for i in range(4)]

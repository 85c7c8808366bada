"""A push to a closed queue names the cause and what to do, one or many at a time."""

from __future__ import annotations

import pytest

from lazily_queue import QueueCell, QueueClosed, testing

FIX = ("queue is closed; push refused: closing a queue is for good (what it holds still "
       "drains); stop pushing to it, or delete it (`lazily-queue queue delete`) and declare "
       "it again to reuse the name")


async def test_a_push_to_a_closed_queue_says_closing_is_for_good_and_what_to_do() -> None:
    local: QueueCell[int] = QueueCell()
    async with testing.cluster(1) as cluster:
        replicated = (await cluster.leader()).queue("orders")
        for q in (local, replicated):
            await q.close()
            with pytest.raises(QueueClosed) as one:
                await q.push(1)
            with pytest.raises(QueueClosed) as many:
                await q.push_many([1, 2])
            assert str(one.value) == str(many.value) == f"{q.name}: {FIX}"

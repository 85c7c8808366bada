"""A storage called directly (not through a cell): its ``timeout`` bounds its one
attempt, ``None`` is the backend's own bound and ``0`` is zero; one that is no number of
seconds is refused as a cell refuses it, before anything applies
(:mod:`lazily_queue.storage.attempts`). The brokers' are in ``tests/brokers``."""

from __future__ import annotations

import asyncio
import inspect
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import Node, WorkQueueCell, testing
from lazily_queue.brokers import (
    nats_queue,
    nats_topic,
    nats_work,
    redis_queue,
    redis_topic,
    redis_work,
)
from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.storage import (
    local,
    local_expiry,
    local_groups,
    local_limited,
    local_topic,
    local_topic_expiry,
    local_work,
    local_work_expiry,
)
from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)

BAD = [("soon", TypeError), (float("nan"), ValueError), (True, TypeError)]

#: Operations that hand their ``timeout`` on to one that applies the rule.
DELEGATING = {"QueueMirror.poll", "WorkMirror.poll"}


LOCAL = [local.VecDequeStorage, local_topic.LocalTopicStorage, local_groups.LocalGroupStorage,
         local_groups.ExpiringGroupStorage, local_work.LocalWorkQueueStorage,
         local_work_expiry.ExpiringWorkQueueStorage, local_expiry.ExpiringDequeStorage,
         local_topic_expiry.ExpiringTopicStorage, local_limited.LimitedDequeStorage,
         local_limited.LimitedExpiringDequeStorage]
BROKER = [redis_queue.RedisQueueStorage, redis_topic.RedisTopicStorage,
          redis_work.RedisWorkQueueStorage, nats_queue.NatsQueueStorage,
          nats_topic.NatsTopicStorage, nats_work.NatsWorkQueueStorage]


def _ops(cls: type) -> list[tuple[str, Any]]:
    """The operations of ``cls`` with a ``timeout`` (those that apply the rule
    themselves), by name."""
    return [(name, fn) for name in dir(cls)
            if inspect.isfunction(fn := getattr(cls, name)) and fn.__qualname__ not in DELEGATING
            and "timeout" in inspect.signature(fn).parameters]


def _call(fn: Any, timeout: object) -> Any:
    """``fn`` called on no storage (a bare object), ``None`` for each of its arguments."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    args = [None for p in params if p.kind is p.POSITIONAL_OR_KEYWORD and p.default is p.empty]
    kwargs = {p.name: None for p in params if p.kind is p.KEYWORD_ONLY and p.name != "timeout"
              and p.default is p.empty}
    return fn(object(), *args, **kwargs, timeout=timeout)


async def test_every_local_and_broker_operation_with_a_timeout_applies_the_rule() -> None:
    missing = []
    for cls in LOCAL + BROKER:
        for name, fn in _ops(cls):
            try:
                await _call(fn, "soon")
            except TypeError as e:
                if "timeout must be a number of seconds or None" in str(e):
                    continue
            except Exception:
                pass
            missing.append(f"{cls.__name__}.{name}")
    assert missing == []


def test_a_local_operation_is_its_own_coroutine_with_none_around_it() -> None:
    wrapped = []
    for cls in LOCAL:
        for name, fn in _ops(cls):
            coro = _call(fn, None)
            if coro.cr_code is not inspect.unwrap(fn).__code__ or coro.cr_code.co_name != name:
                wrapped.append(f"{cls.__name__}.{name} runs {coro.cr_code.co_qualname}")
            coro.close()
    assert wrapped == []


@pytest.mark.parametrize(("bad", "error"), [*BAD, ("1", TypeError), (Decimal("1"), TypeError)])
async def test_a_local_storage_refuses_a_bad_timeout_applying_nothing(
        bad: Any, error: type[Exception]) -> None:
    q: local.VecDequeStorage[str] = local.VecDequeStorage()
    t: local_topic.LocalTopicStorage[str] = local_topic.LocalTopicStorage()
    w: Any = WorkQueueCell().storage
    for call in (lambda: q.offer("x", timeout=bad), lambda: q.poll_many(1, timeout=bad),
                 lambda: q.close(timeout=bad), lambda: t.publish("x", timeout=bad),
                 lambda: w.push("x", timeout=bad)):
        with pytest.raises(error, match="timeout must be a number of seconds or None"):
            await call()
    assert q.len() == 0 and not q.is_closed() and t.end_offset() == 0
    assert w.pending_len() == 0


async def test_a_local_storage_makes_its_attempt_with_timeout_zero() -> None:
    q: local.VecDequeStorage[str] = local.VecDequeStorage()
    assert await q.offer("x", timeout=0) is None
    assert await q.offer("y", timeout=-1) is None
    assert await q.poll_many(2, timeout=0) == ["x", "y"]


async def _zero_and_none(node: Any) -> None:
    q, t, w = node.queue("q").storage, node.topic("t").storage, node.work_queue("w").storage
    await q.declare()
    await t.declare()
    await w.declare()
    for call in (lambda: q.offer("x", timeout=0), lambda: q.offer("x", timeout=-1),
                 lambda: t.publish("x", timeout=0.0), lambda: w.push("x", timeout=0)):
        with pytest.raises(CommitTimeout, match="it was not applied"):
            await call()
    for bad, error in BAD:
        with pytest.raises(error, match="timeout must be a number of seconds or None"):
            await q.offer("x", timeout=bad)
    assert await q.offer("kept", timeout=None) is None
    assert await q.offer("kept too", timeout=5) is None
    assert await q.poll_many(10) == ["kept", "kept too"]  # nothing else applied
    assert (await t.publish("p", timeout=None)).result == 0


async def test_a_nodes_storage_gives_timeout_zero_no_time_and_none_its_op_timeout() -> None:
    async with testing.cluster(3, op_timeout=5.0) as c:
        node = await c.leader()
        await _zero_and_none(node)
        with pytest.raises(CommitTimeout):
            await node.barrier(timeout=0)
        with pytest.raises(TypeError, match="timeout must be a number of seconds or None"):
            await node.barrier(timeout="soon")  # type: ignore[arg-type]
        await node.barrier(timeout=None)


async def test_a_clients_storage_gives_timeout_zero_no_time() -> None:
    async with cluster_with_clients(1) as (_, addresses), client_of(addresses) as client:
        await _zero_and_none(client)
        for long in (7_200, float("inf"), 10**400):  # past the hour a member is given
            await client.barrier(timeout=long)


async def test_waiting_for_a_leader_takes_a_timeout_as_the_storages_do(tmp_path: Path) -> None:
    peers = {i: f"unix://{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    node = Node(1, data_dir=tmp_path / "1", peers=peers, secret=b"s", durability="none")
    await node.start()  # alone of three: it never knows a leader
    try:
        for bad, error in [*BAD, (Decimal("1"), TypeError)]:
            with pytest.raises(error, match="timeout must be a number of seconds or None"):
                await node.wait_for_leader(timeout=bad)
        for timeout in (0, -5, float("-inf")):
            with pytest.raises(TimeoutError, match="saw no leader within") as seen:
                await node.wait_for_leader(timeout=timeout)
            assert (f"saw no leader within {timeout}s: no quorum: node 1 reaches 1 of 3 "
                    "members") in str(seen.value)  # why, and what to do
            assert "start the unreachable ones (2, 3) or mend the network to them; its Raft " \
                   "state: {" in str(seen.value)
        for unbounded in (None, 10**400, float("inf")):  # no bound: waits on
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await node.wait_for_leader(timeout=unbounded)
    finally:
        await node.stop()

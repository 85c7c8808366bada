"""QueueCell push options combined and delayed elements at the cells: local (on the
cell's clock), on a cluster (a follower's popper wakes when the leader promotes), through
a client, the thread-safe wrapper and transactions; bad options raise their typed error
before anything changes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lazily_queue import (
    ClientAccess,
    ClientGrant,
    Credentials,
    InvalidHeaders,
    InvalidMessageId,
    InvalidSchedule,
    InvalidTtl,
    Limits,
    QueueCell,
    TransactionUnsupported,
    UnsupportedOperation,
    VecDequeStorage,
    connect,
    testing,
    transaction,
)
from lazily_queue.core.queue import QueuePopError, QueuePushError
from lazily_queue.reactive import Effect
from lazily_queue.storage.capabilities import StorageCapabilities
from tests.clock import FakeClock

pytestmark = pytest.mark.timeout(60)


async def test_every_option_combines_on_one_local_element() -> None:
    clock = FakeClock()
    q: QueueCell[str] = QueueCell(ttl=3600.0, clock=clock)
    for _ in range(2):
        assert await q.offer("a", msg_id="m", headers={"k": "v"}, ttl=5.0, delay=2.0) is None
    await q.push("b", headers={"k": "w"}, ttl=1.0)
    assert (q.len(), q.delayed_len()) == (1, 1)
    assert [(due, value) for due, _, value in q.delayed()] == [(1_002_000, "a")]
    clock.now += 2  # b expired (ttl 1), a due
    message = await q.pop_message()
    assert (message.value, dict(message.headers), message.id) == ("a", {"k": "v"}, 0)
    assert (q.expired(), q.delayed_len(), q.len()) == (1, 0, 0)
    await q.push("c", msg_id="m", delay=1.0)  # still in the window: nothing
    assert (q.len(), q.delayed_len()) == (0, 0)


async def test_delayed_elements_fall_due_in_due_then_commit_order() -> None:
    clock = FakeClock()
    q: QueueCell[str] = QueueCell(clock=clock)
    await q.push("late", delay=3.0)
    await q.push("early", not_before=datetime.fromtimestamp(1_001.0, UTC))
    await q.push("early-too", delay=1.0)
    await q.push("ready")
    assert q.try_pop() == "ready"
    assert q.try_pop() is QueuePopError.Empty
    clock.now += 5
    assert [q.try_pop() for _ in range(3)] == ["early", "early-too", "late"]


async def test_a_local_popper_waits_for_the_due_time_and_readers_follow() -> None:
    q: QueueCell[str] = QueueCell()
    seen: list[tuple[int, int, bool]] = []
    effect = Effect(lambda: seen.append((q.len(), q.delayed_len(), q.is_empty())),
                    context=q.ctx)
    await q.push("soon", delay=0.05)
    assert seen == [(0, 0, True), (0, 1, True)]  # the delayed push moved delayed_len only
    assert await q.pop(timeout=30) == "soon"
    assert seen[-1] == (0, 0, True) and q.delayed_len() == 0
    effect.dispose()


async def test_a_closed_local_queue_still_delivers_its_delayed_elements() -> None:
    q: QueueCell[str] = QueueCell()
    await q.push("last", delay=0.05)
    await q.close()
    assert await q.offer("refused", delay=0.0) is QueuePushError.Closed
    assert q.try_pop() is QueuePopError.Empty  # not Closed: one is delayed
    assert await q.pop(timeout=30) == "last"
    assert q.try_pop() is QueuePopError.Closed


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"delay": -1.0}, InvalidSchedule),
    ({"delay": float("nan")}, InvalidSchedule),
    ({"not_before": datetime.now()}, InvalidSchedule),  # naive
    ({"delay": 1.0, "not_before": datetime.now(UTC)}, InvalidSchedule),
    ({"delay": 1.0, "ttl": 0}, InvalidTtl),
    ({"delay": 1.0, "headers": {"k": 1}}, InvalidHeaders),
    ({"delay": 1.0, "msg_id": ""}, InvalidMessageId),
])
async def test_bad_options_raise_their_typed_error_and_change_nothing(
        kwargs: dict[str, Any], error: type[Exception]) -> None:
    q: QueueCell[str] = QueueCell(ttl=10.0)
    with pytest.raises(error):
        await q.push("a", **kwargs)
    with pytest.raises(error):
        await q.offer("a", **kwargs)
    assert (q.len(), q.delayed_len()) == (0, 0)


async def test_a_backend_without_an_option_refuses_it_by_name() -> None:
    plain: QueueCell[str] = QueueCell()
    with pytest.raises(UnsupportedOperation, match="VecDequeStorage has no message expiry"):
        await plain.push("a", ttl=1.0, delay=1.0)
    assert plain.delayed_len() == 0


async def test_a_local_queue_takes_ttl_and_limits_together() -> None:
    clock = FakeClock()
    q: QueueCell[str] = QueueCell(ttl=10.0, limits=Limits(max_length=2), clock=clock)
    await q.push("a", ttl=1.0)
    await q.push("b")
    with pytest.raises(Exception, match="max_length"):
        await q.push("c", wait=False)
    clock.now += 1
    assert await q.pop() == "b" and q.expired() == 1  # a expired: room again
    await q.push("c", delay=1.0)
    assert q.limits() == Limits(max_length=2) and q.quota is not None


async def test_a_followers_popper_wakes_when_a_delayed_element_falls_due() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        follower = (await c.followers())[0]
        waiting = asyncio.create_task(follower.queue("q").pop())
        q = leader.queue("q")
        await q.push("later", delay=0.2, msg_id="once", headers={"k": "v"}, ttl=60.0)
        await q.push("later", delay=0.2, msg_id="once", headers={"k": "v"}, ttl=60.0)
        await c.settle()
        assert follower.queue("q").delayed_len() in (0, 1)
        assert await asyncio.wait_for(waiting, 30) == "later"
        await c.settle()
        for node in c.running:
            assert (node.queue("q").len(), node.queue("q").delayed_len()) == (0, 0)


async def test_a_replicated_queue_with_limits_and_ttl_takes_every_option() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("l", limits=Limits(max_length=1, overflow="drop_oldest"), ttl=60.0)
        await q.push("a", headers={"n": "1"}, ttl=30.0, msg_id="a")
        await q.push("b", headers={"n": "2"}, delay=0.0)
        message = await q.pop_message()
        assert (message.value, dict(message.headers)) == ("b", {"n": "2"})
        assert q.quota is not None and q.quota.dropped() == 1


async def test_a_client_pushes_with_options_and_its_mirror_follows() -> None:
    token = b"token-of-the-queue-options-tests"
    prefix = "memory://queue-options"

    def options(node_id: str) -> testing.NodeOptions:
        return {"clients": ClientAccess([ClientGrant("web", token, produce=["*"],
                                                     consume=["*"])],
                                        listen=f"{prefix}-{node_id}")}

    async with testing.cluster(1, node_options=options) as c, connect(
            [f"{prefix}-1"], Credentials("web", token)) as client:
        q: QueueCell[str] = client.queue("jobs")
        assert q.delayed_len() == 0  # start mirroring
        at = datetime.now(UTC) + timedelta(hours=1)
        await q.push("tomorrow", not_before=at, headers={"k": "v"}, msg_id="t", ttl=7200.0)
        await client.barrier()
        assert (q.len(), q.delayed_len()) == (0, 1)
        assert c.node(1).queue("jobs").delayed_len() == 1


async def test_the_thread_safe_wrapper_passes_the_options() -> None:
    q: QueueCell[str] = QueueCell()
    handle = q.threadsafe()

    def producer() -> list[Any]:
        handle.push("x", delay=0.05, headers={"k": "v"})
        return [handle.delayed_len(), handle.pop(timeout=30)]

    assert await asyncio.to_thread(producer) == [1, "x"]


async def test_transactions_carry_a_queue_push_with_options() -> None:
    clock = FakeClock()
    local: QueueCell[str] = QueueCell(ttl=60.0, clock=clock)
    async with transaction() as tx:
        tx.push(local, "a", ttl=5.0, delay=1.0, msg_id="tx-a", headers={"k": "v"})
        tx.push(local, "b")
    assert (local.len(), local.delayed_len()) == (1, 1)
    with pytest.raises(TransactionUnsupported, match="VecDequeStorage has no expiry"):
        transaction().push(QueueCell(), "c", ttl=1.0)
    with pytest.raises(InvalidSchedule):
        transaction().push(local, "c", delay=-1)
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("tx")
        async with node.transaction() as tx2:
            tx2.push(q, "later", delay=3600.0, ttl=7200.0, msg_id="tx-later")
            tx2.push(q, "later", delay=3600.0, ttl=7200.0, msg_id="tx-later")
            tx2.push(q, "now", headers={"k": "v"})
        assert (q.len(), q.delayed_len()) == (1, 1)


async def test_message_and_batch_pops_wait_for_a_delayed_element_and_readers_follow() -> None:
    q: QueueCell[str] = QueueCell()
    seen: list[tuple[int, int, bool]] = []
    effect = Effect(lambda: seen.append((q.len(), q.delayed_len(), q.is_empty())),
                    context=q.ctx)
    due = datetime.now(UTC) + timedelta(seconds=0.05)  # one due time: they fall due together
    await q.push("m", not_before=due, headers={"k": "v"})
    await q.push("n", not_before=due)
    message = await q.pop_message(timeout=30)  # both fall due: one taken
    assert (message.value, dict(message.headers)) == ("m", {"k": "v"})
    assert seen[-1] == (1, 0, False)  # every reader that moved was invalidated
    await q.push("o", delay=0.05)
    assert await q.pop_many(5, timeout=30) == ["n"]
    assert await q.pop_many(5, timeout=30) == ["o"]
    effect.dispose()


async def test_an_expiring_deque_pops_live_elements_with_their_headers_in_one_pass() -> None:
    from lazily_queue.core.push_options import PushOptions
    from lazily_queue.storage.local_limited import LimitedExpiringDequeStorage
    clock = FakeClock()
    d: LimitedExpiringDequeStorage[str] = LimitedExpiringDequeStorage(
        Limits(max_length=5), clock=clock)
    for value, ttl in (("gone", 1.0), ("a", None), ("plain", None), ("b", None)):
        options = PushOptions.checked(ttl=ttl, headers=None if value == "plain"
                                      else {"v": value})
        assert await d.offer_options(value, options) is None
    clock.now += 2
    result = d.pop_headers(2)
    assert not isinstance(result, QueuePopError)
    values, runs, headers = result
    assert (values, runs, headers) == (["a", "plain"], [[1, 2, 1_000_000]], [[1, {"v": "a"}]])
    assert d.expired_count() == 1 and d.quota.bytes == 1 and len(d.quota.sizes) == 1
    assert d.headers_state() == [[3, {"v": "b"}]]  # gone's headers left with it


class _HeadersWithoutOptions:
    """A backend that keeps headers but has no ``offer_options`` to push them with."""

    capabilities = StorageCapabilities(sync=True, messages=True, headers=True)

    def __init__(self) -> None:
        self.inner: VecDequeStorage[str] = VecDequeStorage()

    def __getattr__(self, name: str) -> Any:
        if name == "offer_options":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_a_backend_keeping_headers_must_take_them_with_offer_options() -> None:
    with pytest.raises(TypeError, match=r"_HeadersWithoutOptions.*offer_options"):
        QueueCell(_HeadersWithoutOptions())  # type: ignore[arg-type]

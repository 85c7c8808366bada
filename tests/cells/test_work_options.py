"""Work-queue options combine: msg_id, headers, ttl, priority and delay/not_before on one
push, and limits with a retry policy, scheduling and TTLs on one work queue; locally, on
a cluster and through the state machine (malformed options maps refused)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from lazily_queue import (
    LimitExceeded,
    Limits,
    RetryPolicy,
    WorkQueueCell,
    testing,
)
from lazily_queue.core.limited_work import DROPPED, HELD_BYTES
from lazily_queue.reactive import computed
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.serializers import serializer
from lazily_queue.storage.capabilities import StorageCapabilities
from tests.clock import FakeClock


async def _combined(w: WorkQueueCell, t0: float, unit: float) -> None:
    """Every option on one push, then the rules: dedup of the whole push, no early or
    expired delivery, priority once due, headers on every delivery. Times are explicit:
    ``t0`` plus seconds in the backend's ``unit``."""

    def at(seconds: float) -> float:
        return t0 + seconds * unit

    first = await w.push("urgent", msg_id="m-1", headers={"trace": "t1"}, ttl=60,
                         priority=7, delay=0.2, now=at(0))
    assert await w.push("other", msg_id="m-1", headers={"trace": "t2"}, ttl=1,
                        priority=1, now=at(0)) == first  # the repeat adds nothing
    plain = await w.push("plain")
    short = await w.push("short", ttl=0.1, priority=2, delay=0.05, now=at(0))
    assert w.delayed_len() == 2 and w.pending_len() == 1
    early = await w.poll("a", at(0.01))  # the delayed items are not due yet
    assert early is not None and early.item_id == plain
    job = await w.poll("a", at(0.3))  # due: the highest priority first
    assert job is not None
    assert (job.item_id, w.headers_of(job.item_id)) == (first, {"trace": "t1"})
    await w.nack("a", job.delivery_id)
    again = await w.poll("b", at(0.3))  # the redelivery keeps its headers
    assert again is not None
    assert again.item_id == first and again.attempt == 2
    assert w.headers_of(again.item_id) == {"trace": "t1"}
    assert await w.poll("b", at(0.3)) is None  # "short" expired before it was due
    assert w.expired() == 1 and short not in (first, plain)


async def _ttl_from_the_push(w: WorkQueueCell, t0: float, unit: float) -> None:
    """A delayed item's TTL counts from its push, not from its due time."""
    item = await w.push("x", ttl=0.1, delay=0.08, now=t0)
    kept = await w.push("y", ttl=0.3, delay=0.08, now=t0)
    job = await w.poll("a", t0 + 0.12 * unit)  # due at 0.08; "x" expired at 0.1
    assert job is not None and job.item_id == kept != item
    assert w.expired() == 1


async def test_a_delayed_items_ttl_counts_from_its_push_locally() -> None:
    clock = FakeClock()
    await _ttl_from_the_push(WorkQueueCell(clock=clock, ttl=600), clock.now, 1)


async def test_a_delayed_items_ttl_counts_from_its_push_on_a_cluster(
    wall: FakeClock,
) -> None:
    # Explicit times an hour ahead of the real clock; the leader's clock two hours ahead
    # (an op's time never runs past the leader's) and no maintenance acting meanwhile.
    t0 = round(time.time() * 1000) + 3_600_000
    wall.now += 7200
    async with testing.cluster(1, maintenance_interval=None) as c:
        w = (await c.leader()).work_queue("w", visibility_timeout=30)
        await _ttl_from_the_push(w, t0, 1000)


async def test_every_push_option_combines_locally() -> None:
    clock = FakeClock()
    await _combined(WorkQueueCell(clock=clock, ttl=600), clock.now, 1)


async def test_every_push_option_combines_on_a_cluster(wall: FakeClock) -> None:
    t0 = round(time.time() * 1000) + 3_600_000
    wall.now += 7200  # as above
    async with testing.cluster(3, maintenance_interval=None) as c:
        w = (await c.leader()).work_queue("w", visibility_timeout=30)
        await _combined(w, t0, 1000)
        await c.settle()
        follower = (await c.followers())[0]
        mirror = follower.work_queue("w", visibility_timeout=30)
        seen = [dict(mirror.headers_of(d.item_id)) for d in mirror.in_flight()]
        assert seen == [{}, {"trace": "t1"}] and mirror.expired() == 1


async def test_limits_combine_with_retry_ttl_priority_delay_and_headers_locally() -> None:
    clock = FakeClock()
    w = WorkQueueCell(clock=clock, visibility_timeout=10, ttl=100,
                      limits=Limits(max_length=3, overflow="drop_oldest"),
                      retry=RetryPolicy.fixed(5))
    assert w.quota is not None
    seen = computed(lambda: (w.quota.bytes(), w.quota.dropped()),  # type: ignore[union-attr]
                    context=w.ctx)
    assert seen() == (0, 0)
    high = await w.push("h", priority=5, headers={"k": "v"}, ttl=50)
    later = await w.push("d", delay=30)
    low = [await w.push(f"l{i}") for i in range(2)]
    assert w.dropped() == 1 and [p.item_id for p in w.pending()] == [high, low[1]]
    assert seen() == (w.held_bytes(), 1) and w.delayed_len() == 1  # delayed never dropped
    job = await w.claim("a")
    assert job.item_id == high and w.headers_of(high) == {"k": "v"}
    await w.nack("a", job.delivery_id)  # the retry policy's back-off: delayed, held
    assert w.delayed_len() == 2 and w.held_bytes() == seen()[0]
    clock.now += 31
    order = [(await w.claim("a")).item_id for _ in range(3)]
    assert order == [high, low[1], later]  # priority once due, then due order


async def test_a_full_limited_queue_counts_delayed_and_prioritized_items() -> None:
    w = WorkQueueCell(clock=FakeClock(), limits=Limits(max_length=2))
    await w.push("a", delay=10)
    await w.push("b", priority=3, msg_id="x")
    with pytest.raises(LimitExceeded):
        await w.push("c", headers={"k": "v"}, wait=False)
    assert (w.pending_len(), w.delayed_len()) == (1, 1)


async def test_limits_retry_and_ttl_declared_together_on_a_cluster() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        w = node.work_queue("w", visibility_timeout=30, retry=RetryPolicy.fixed(1),
                            ttl=60, limits=Limits(max_length=2, overflow="drop_oldest"))
        assert w.quota is not None
        for i in range(3):
            await w.push(f"v{i}", headers={"n": str(i)}, priority=i % 2, ttl=30)
        assert w.dropped() == 1 and w.quota.dropped() == 1
        assert w.quota.bytes() == w.held_bytes() > 0
        core = node.view.work_queue("w").core  # type: ignore[union-attr]
        assert core.retry == RetryPolicy.fixed(1).scaled(1000)
        assert node.work_queue("w", visibility_timeout=30, retry=RetryPolicy.fixed(1),
                               ttl=60, limits=Limits(max_length=2,
                                                     overflow="drop_oldest")) is w


async def test_a_cell_with_a_serializer_combines_every_option_in_one_push() -> None:
    codec = serializer(lambda v: {"v": v}, lambda doc: doc["v"])
    w = WorkQueueCell(clock=FakeClock(), serializer=codec)
    item = await w.push("x", headers={"k": "v"}, priority=1, msg_id="m", delay=0)
    assert await w.push("x", headers={"k": "v"}, priority=1, msg_id="m") == item
    assert w.headers_of(item) == {"k": "v"} and w.pending_len() == 1


def test_a_backend_with_pushes_with_options_but_no_push_options_is_refused() -> None:
    class Partial:
        capabilities = StorageCapabilities(headers=True)

        def __getattr__(self, name: str) -> Any:
            if name == "push_options":
                raise AttributeError(name)
            return lambda *a, **k: None

    with pytest.raises(TypeError, match="declares the 'headers' capability but has no "
                                        "push_options"):
        WorkQueueCell(Partial())  # type: ignore[arg-type]


async def test_now_is_the_time_a_delay_or_ttl_counts_from() -> None:
    w = WorkQueueCell(clock=FakeClock(), ttl=100)
    with pytest.raises(ValueError, match="delay or ttl"):
        await w.push("x", now=5.0)
    await w.push("t", ttl=2, now=0.0)  # counted from 0: expired at 2
    assert await w.poll("a", 3.0) is None and w.expired() == 1
    when = datetime.fromtimestamp(2000, UTC)
    item = await w.push("nb", not_before=when, ttl=5000, priority=4, headers={"a": "b"})
    assert w.delayed()[0][0] == 2000 and await w.poll("a", 1999.0) is None
    assert (await w.poll("a", 2000.0)).item_id == item  # type: ignore[union-attr]


def _sm() -> StateMachine:
    sm = StateMachine()
    sm.now = 1_000
    assert sm.apply_plain(C.WORK_DECLARE, ["w", 1000, 3]) is None
    return sm


@pytest.mark.parametrize("options", [
    [], "x", {"nope": 1}, {"ttl_ms": 0}, {"ttl_ms": "5"}, {"priority": 10},
    {"priority": True}, {"priority": 0}, {"delay_ms": -1}, {"delay_ms": 1.5},
    {"delay_ms": 1, "not_before_ms": 2}, {"headers": {}}, {"headers": {"k": 1}},
    {"msg_id": ""}, {"now": 3}, {1: 2},
])
def test_a_malformed_options_map_is_refused_and_changes_nothing(options: Any) -> None:
    sm = _sm()
    before = sm.capture()
    result = sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", options, None, "v"])
    assert isinstance(result, OpError) and result.code == "bad_options"
    assert sm.capture() == before
    for args in (["w", {}, -1, "v"], ["w", {}, "now", "v"], ["w", {}, None]):
        refused = sm.apply_plain(C.WORK_PUSH_OPTIONS, args)
        assert isinstance(refused, OpError) and refused.code in ("bad_time", "bad_args")
    assert sm.capture() == before


def test_the_options_op_in_the_state_machine_and_its_snapshot() -> None:
    sm = _sm()
    doc = {"msg_id": "m", "headers": {"k": "v"}, "ttl_ms": 500, "priority": 3,
           "delay_ms": 100}
    item, mask = sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", doc, None, "v"])
    assert sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", doc, None, "other"]) == [item, mask]
    again = StateMachine()
    again.restore(sm.capture())
    core = again.work_queues["w"].core
    assert core.delayed()[0][0] == 1_100 and core.priority_of(item) == 3
    assert again.expiry[("work_queue", "w")].deadlines == {item: 1_500}
    assert again.work_headers["w"].get(item) == {"k": "v"}
    again.now = 1_200
    claimed = again.apply_plain(C.WORK_CLAIM, ["w", "me", None])[0]
    assert claimed["item_id"] == item
    assert isinstance(sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", {}, 5, "v"]), list)


def test_declare_options_and_its_mismatch() -> None:
    sm = StateMachine()
    opts = {"retry": [100, 2, 1000], "limits": [2, None, "reject"]}
    assert sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, opts]) is None
    assert sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, opts]) is None
    other = sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3, {"retry": [1, 1, None]}])
    assert isinstance(other, OpError) and other.code == "config_mismatch"
    bad = sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["v", 1000, 3, {"limits": "x"}])
    assert isinstance(bad, OpError) and bad.code == "bad_config"
    for i in range(2):
        sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", {"priority": 1}, None, f"v{i}"])
    full = sm.apply_plain(C.WORK_PUSH_OPTIONS, ["w", {"delay_ms": 5}, None, "v"])
    assert isinstance(full, OpError) and full.code == "full"
    again = StateMachine()
    again.restore(sm.capture())
    core = again.work_queues["w"].core
    assert core.retry == RetryPolicy(100, 2, 1000) and core.held() == 2  # type: ignore[attr-defined]


def test_quota_bits_mark_the_transitions_that_move_bytes_or_drops() -> None:
    sm = StateMachine()
    sm.apply_plain(C.WORK_DECLARE_OPTIONS, ["w", 1000, 3,
                                            {"limits": [1, None, "drop_oldest"]}])
    _, mask = sm.apply_plain(C.WORK_PUSH, ["w", "a"])
    assert mask & HELD_BYTES and not mask & DROPPED
    _, mask = sm.apply_plain(C.WORK_PUSH, ["w", "b"])  # "a" dropped: counts unchanged
    assert mask & DROPPED


def test_the_options_op_is_a_work_queue_message_op() -> None:
    assert C.WORK_PUSH_OPTIONS in C.MESSAGE_OPS
    assert C.family_of(C.WORK_PUSH_OPTIONS) == C.family_of(C.WORK_DECLARE_OPTIONS) == (
        "work_queue")


async def test_a_client_pushes_with_every_option_combined() -> None:
    from lazily_queue import ClientAccess, ClientGrant, Credentials, connect

    def options(node_id: str) -> testing.NodeOptions:
        grant = ClientGrant("web", b"token-of-the-web-tier", produce=["*"], consume=["*"])
        return {"clients": ClientAccess([grant], listen=f"memory://wo-{node_id}")}

    async with testing.cluster(3, node_options=options) as c:
        addresses = [f"memory://wo-{i}" for i in range(1, 4)]
        async with connect(addresses, Credentials("web", b"token-of-the-web-tier"),
                           ping_interval=0.2, ping_timeout=1.0) as client:
            w = client.work_queue("w")
            caps = w.capabilities
            assert caps.headers and caps.scheduling and caps.expiry and caps.dedup
            first = await w.push("late", msg_id="c-1", headers={"k": "v"}, ttl=7200,
                                 priority=3, delay=3600)
            assert await w.push("late", msg_id="c-1", priority=9) == first
            await w.push("now", priority=1, headers={"k": "now"}, ttl=600)
            job = await w.claim("x")
            assert job.value == "now" and w.headers_of(job.item_id) == {"k": "now"}
            await c.settle()
            member = c.node(1).work_queue("w")
            assert member.delayed_len() == 1 and member.headers_of(first) == {"k": "v"}

"""Message headers on topics: published with an element, read by stream_messages, kept
by offset until the element is collected; local and replicated, kept by snapshots."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from lazily_queue import InvalidHeaders, TopicCell, testing
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine


async def _read(t: TopicCell[Any], subscriber: str, n: int) -> list[tuple[Any, dict[str, str]]]:
    out: list[tuple[Any, dict[str, str]]] = []
    async with contextlib.aclosing(t.stream_messages(subscriber)) as stream:
        async for m in stream:
            out.append((m.value, dict(m.headers)))
            if len(out) == n:
                break
    return out


async def _headers_travel(t: TopicCell[Any]) -> None:
    await t.subscribe("s")
    assert await t.publish("a", headers={"trace": "1"}) == 0
    assert await t.publish("b") == 1
    assert await t.publish("c", headers={}) == 2
    assert await t.publish("d", msg_id="m", headers={"try": "1"}) == 3
    assert await t.publish("d", msg_id="m", headers={"try": "2"}) == 3  # deduplicated
    assert await _read(t, "s", 4) == [("a", {"trace": "1"}), ("b", {}), ("c", {}),
                                      ("d", {"try": "1"})]
    await t.subscribe("late", start="head")  # replay sees the same headers
    assert (await _read(t, "late", 1)) == [("a", {"trace": "1"})]
    with pytest.raises(InvalidHeaders, match="must be str"):
        await t.publish("x", headers={"n": 1})  # type: ignore[dict-item]
    assert t.end_offset() == 4


async def test_topic_headers_locally() -> None:
    t: TopicCell[str] = TopicCell()
    await _headers_travel(t)
    await t.seek("late", 4)
    await t.gc()
    assert t.storage._headers is not None  # type: ignore[attr-defined]
    await t.publish("e", headers={"k": "v"})  # collected elements' headers leave
    assert t.storage._headers.entries() == [[4, {"k": "v"}]]  # type: ignore[attr-defined]


async def test_topic_headers_on_a_cluster() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        await _headers_travel(leader.topic("t"))
        await c.settle()
        other = next(n for n in c.nodes.values() if n is not leader)
        t = other.topic("t")
        await t.subscribe("o", start="head")
        assert await _read(t, "o", 4) == [("a", {"trace": "1"}), ("b", {}), ("c", {}),
                                          ("d", {"try": "1"})]


def test_topic_headers_in_snapshots_and_after_delete() -> None:
    sm = StateMachine()
    sm.apply_plain(C.TOPIC_DECLARE, ["t"])
    sm.apply_plain(C.TOPIC_SUBSCRIBE, ["t", "s", "durable"])
    assert sm.apply_plain(C.TOPIC_PUBLISH_HEADERS, ["t", {"a": "1"}, None, "x"]) == 0
    assert sm.apply_plain(C.TOPIC_PUBLISH_HEADERS, ["t", {"b": "2"}, None, "y"]) == 1
    sm.apply_plain(C.TOPIC_ADVANCE, ["t", "s"])
    sm.apply_plain(C.TOPIC_GC, ["t"])
    doc = sm.capture()
    assert doc["headers"] == {"topics": {"t": [[1, {"b": "2"}]]}}
    again = StateMachine()
    again.restore(doc)
    assert again.topic_headers["t"].get(1) == {"b": "2"}
    sm.apply_plain(C.TOPIC_DELETE, ["t"])
    sm.apply_plain(C.TOPIC_DECLARE, ["t"])
    sm.apply_plain(C.TOPIC_PUBLISH, ["t", "fresh"])
    sm.apply_plain(C.TOPIC_PUBLISH, ["t", "fresh"])
    assert "headers" not in sm.capture()  # the old topic's headers left with it

"""Message headers on queues: pushed with an element, read by message pops, kept when
given back, dropped with the element by plain pops; bounded and checked at the call;
local and replicated alike, kept by snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import InvalidHeaders, QueueCell, UnsupportedOperation, testing
from lazily_queue.core import headers as H
from lazily_queue.core.fifo import Fifo
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.storage import StorageCapabilities, VecDequeStorage


def _table(q: QueueCell[Any]) -> list[list[Any]]:
    storage: Any = q.storage
    fifo = storage if isinstance(storage, Fifo) else storage._state()
    assert isinstance(fifo, Fifo)
    return fifo.headers_state()


async def _headers_travel(q: QueueCell[Any]) -> None:
    await q.push("a", headers={"trace": "t-1", "content-type": "text/plain"})
    await q.push("b")
    await q.push("c", headers={"trace": "t-3"})
    await q.push("d", headers={})  # empty: no headers at all
    assert [row[0] for row in _table(q)] == [0, 2]
    first, second = await q.pop_messages(2)
    assert first.headers == {"trace": "t-1", "content-type": "text/plain"}
    assert second.headers == {} and second.value == "b"
    with pytest.raises(TypeError):
        first.headers["x"] = "y"  # type: ignore[index]
    await q.give_back([first, second])  # keep their ids and headers
    again = await q.poll_messages(3)
    assert not isinstance(again, Exception)
    assert [(m.id, m.value, dict(m.headers)) for m in again] == [
        (0, "a", {"trace": "t-1", "content-type": "text/plain"}), (1, "b", {}),
        (2, "c", {"trace": "t-3"})]
    await q.give_back(again[2:])
    assert (await q.pop_message()).headers == {"trace": "t-3"}
    assert (await q.pop_message()).headers == {}
    # a plain pop takes an element's headers with it
    await q.push("e", headers={"k": "v"})
    assert await q.pop() == "e"
    assert _table(q) == []
    # exactly-once with headers: one element, the first push's headers
    await q.push("f", msg_id="m-1", headers={"try": "1"})
    await q.push("f", msg_id="m-1", headers={"try": "2"})
    assert q.len() == 1
    assert (await q.pop_message()).headers == {"try": "1"}


async def test_headers_travel_with_elements_locally() -> None:
    await _headers_travel(QueueCell())


async def test_headers_travel_with_elements_on_a_cluster() -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        await _headers_travel(leader.queue("q"))
        q = leader.queue("q")
        await q.push("x", headers={"h": "1"})
        await q.push("y")
        # an iteration that stops early gives the rest back with its headers
        async for m in q.messages(prefetch=2):
            assert (m.value, dict(m.headers)) == ("x", {"h": "1"})
            break
        await q.push("z", headers={"h": "3"})
        await c.settle()
        for node in c.nodes.values():
            assert _table(node.queue("q")) == [[6 + 2, {"h": "3"}]]  # y has none
        other = next(n for n in c.nodes.values() if n is not leader)
        got = await other.queue("q").pop_messages(2)
        assert [(m.value, dict(m.headers)) for m in got] == [("y", {}), ("z", {"h": "3"})]


async def test_headers_survive_a_restart() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        q = node.queue("q")
        await q.push("a", headers={"h": "a"})
        await q.push("b")
        node = await c.restart(node.node_id, fresh=True)
        await c.wait_for_leader()
        await node.barrier()
        got = await node.queue("q").pop_messages(2)
        assert [(m.value, dict(m.headers)) for m in got] == [("a", {"h": "a"}), ("b", {})]


def test_the_snapshot_section_round_trips_and_old_snapshots_load() -> None:
    sm = StateMachine()
    sm.apply_plain(C.QUEUE_DECLARE, ["q", None])
    sm.apply_plain(C.QUEUE_PUSH_HEADERS, ["q", {"a": "1"}, None, "x"])
    sm.apply_plain(C.QUEUE_PUSH, ["q", "y"])
    sm.apply_plain(C.QUEUE_PUSH_HEADERS, ["q", {"c": "3"}, None, "z"])
    assert sm.apply_plain(C.QUEUE_POP, ["q"]) == "x"  # x's headers leave with it
    doc = sm.capture()
    assert doc["headers"] == {"queues": {"q": [[2, {"c": "3"}]]}}
    again = StateMachine()
    again.restore(doc)
    assert again.apply_plain(C.QUEUE_POP_HEADERS, ["q", 5]) == [
        ["y", "z"], [[1, 2, 0]], [[2, {"c": "3"}]]]
    del doc["headers"]
    old = StateMachine()
    old.restore(doc)  # a snapshot of an older version: no headers
    assert old.apply_plain(C.QUEUE_POP_HEADERS, ["q", 5])[2] == []


def test_the_state_machine_refuses_bad_headers_from_a_peer() -> None:
    sm = StateMachine()
    sm.apply_plain(C.QUEUE_DECLARE, ["q", None])
    for bad in ({"k": 1}, {}, "k=v", {"": "v"}):
        result = sm.apply_plain(C.QUEUE_PUSH_HEADERS, ["q", bad, None, "x"])
        assert isinstance(result, OpError) and result.code == "bad_headers", bad
    assert sm.queues["q"].len() == 0
    result = sm.apply_plain(C.QUEUE_UNPOP_HEADERS, ["q", ["x"], [[0, 1, 0]], [[5, {"a": "b"}]]])
    assert isinstance(result, OpError)


@pytest.mark.parametrize(("bad", "names"), [
    ({str(i): "v" for i in range(H.MAX_HEADERS + 1)}, "65 headers exceed the limit of 64"),
    ({"k" * (H.MAX_KEY_CHARS + 1): "v"}, f"1..{H.MAX_KEY_CHARS} characters"),
    ({"k": "v" * (H.MAX_VALUE_CHARS + 1)}, f"the limit of {H.MAX_VALUE_CHARS}"),
    ({f"k{i}": "v" * 4000 for i in range(5)}, f"the limit of {H.MAX_HEADER_BYTES} bytes"),
    ({"k": 1}, "must be str"),
    ({2: "v"}, "must be str"),
    ([("k", "v")], "must be a mapping"),
])
async def test_headers_out_of_bounds_are_refused_before_anything(bad: Any, names: str) -> None:
    q: QueueCell[str] = QueueCell()
    with pytest.raises(InvalidHeaders, match=names):
        await q.push("x", headers=bad)
    with pytest.raises(InvalidHeaders):
        await q.offer("x", headers=bad)
    assert q.len() == 0


async def test_a_backend_without_headers_refuses_them_by_name() -> None:
    class Plain(VecDequeStorage[Any]):
        __slots__ = ()
        capabilities = StorageCapabilities(sync=True, peek=True, messages=True)

    q: QueueCell[str] = QueueCell(Plain())
    with pytest.raises(UnsupportedOperation, match="Plain does not keep message headers"):
        await q.push("x", headers={"k": "v"})
    await q.push("x")
    assert (await q.pop_message()).headers == {}


def test_an_element_given_back_without_its_id_is_stamped_alike_on_a_restored_replica() -> None:
    sm = StateMachine()
    sm.apply_plain(C.QUEUE_DECLARE, ["q", None])
    sm.now = 100
    sm.apply_plain(C.QUEUE_PUSH, ["q", "a"])
    restored = StateMachine()
    restored.restore(sm.capture())  # its FIFO does not know the last stamp given
    for replica in (sm, restored):
        replica.now = 200
        assert replica.apply_plain(C.QUEUE_POP, ["q"]) == "a"
        replica.apply_plain(C.QUEUE_UNPOP, ["q", "a"])
        replica.apply_plain(C.QUEUE_UNPOP_MANY, ["q", ["b"]])
    assert sm.capture()["queue_ids"] == restored.capture()["queue_ids"] == {
        "q": [3, [[2, 1, 200], [1, 1, 200]]]}

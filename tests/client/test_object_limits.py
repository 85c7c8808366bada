"""The limits on object names and on how many objects a cluster holds: refused where
names enter (a node's cells, a client's cells, a member serving a client, the admin
API), with a typed error naming the limit, before anything is proposed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from lazily_queue import (
    InvalidName,
    Node,
    RequestRefused,
    TooManyObjects,
    admin,
    testing,
)
from lazily_queue.names import DEFAULT_MAX_OBJECTS, MAX_NAME_LENGTH
from lazily_queue.replicated import ops
from tests.client.limits_cluster import check_cap_setting, limited_cluster
from tests.client.test_client_cluster import client_of

pytestmark = pytest.mark.timeout(60)

LONG = "n" * (MAX_NAME_LENGTH + 1)


@asynccontextmanager
async def capped_cluster(max_objects: int | None = None, size: int = 3) -> AsyncIterator[
        tuple[testing.Cluster, list[str]]]:
    """``limited_cluster`` with ``max_objects`` (by default the default)."""
    caps = {} if max_objects is None else {"max_objects": max_objects}
    async with limited_cluster(size, produce=True, **caps) as found:
        yield found


def _objects(node: Node) -> int:
    view = node.view
    return len(view.queues) + len(view.topics) + len(view.work_queues)


async def test_a_node_refuses_an_overlong_name_before_proposing() -> None:
    async with capped_cluster(size=1) as (c, _):
        node = c.node(1)
        applied = node.view.applied_ops
        for open_cell in (node.queue, node.topic, node.work_queue):
            with pytest.raises(InvalidName, match=str(MAX_NAME_LENGTH)):
                open_cell(LONG)
        with pytest.raises(InvalidName, match=str(MAX_NAME_LENGTH)):
            node.topic("t").group("g" * MAX_NAME_LENGTH)  # "t:ggg..." is over
        await node.barrier()
        assert _objects(node) == 0 and node.view.applied_ops == applied + 1
        longest = node.queue("q" * MAX_NAME_LENGTH)  # at the limit: accepted
        await longest.push(1)
        assert await longest.pop() == 1


async def test_a_client_refuses_an_overlong_name_before_sending() -> None:
    async with capped_cluster() as (c, addresses), client_of(addresses) as client:
        for open_cell in (client.queue, client.topic, client.work_queue):
            with pytest.raises(InvalidName, match=str(MAX_NAME_LENGTH)):
                open_cell(LONG)
        assert client.session._next_seq == 1  # nothing was sent
        await c.node(1).barrier()
        assert _objects(c.node(1)) == 0


async def test_a_member_refuses_a_clients_overlong_name() -> None:
    async with capped_cluster() as (c, addresses), client_of(addresses) as client:
        await client.barrier()
        for code, args in ((ops.QUEUE_DECLARE, [LONG, None]), (ops.QUEUE_PUSH, [LONG, 1]),
                           (ops.TOPIC_DECLARE, [LONG]),
                           (ops.TXN, [[ops.QUEUE_PUSH, LONG, 1]]),
                           (ops.GROUP_DECLARE, ["t", "g" * MAX_NAME_LENGTH, 1000, 3, "tail"])):
            with pytest.raises(RequestRefused, match=f"limit of {MAX_NAME_LENGTH}"):
                await client.session.call(code, args, timeout=5)
        await client.barrier()  # the link still serves
        member = c.node(1)
        await member.barrier()
        assert _objects(member) == 0


async def test_members_cap_the_objects_a_cluster_holds() -> None:
    async with capped_cluster(max_objects=3) as (c, addresses), \
            client_of(addresses) as client:
        one, two = c.node(1), c.node(2)
        for name in ("a", "b"):
            await one.queue(name).push(name)
        await client.topic("t").publish("x")
        await c.settle()
        with pytest.raises(TooManyObjects, match="max_objects=3") as refused:
            one.work_queue("d")
        assert refused.value.limit == 3
        with pytest.raises(TooManyObjects, match="max_objects=3"):
            await client.queue("d").push(1)
        with pytest.raises(TooManyObjects, match="max_objects=3"):
            await client.session.call(ops.WORK_DECLARE, ["d", 1000, 3], timeout=5)
        with pytest.raises(TooManyObjects, match="max_objects=3"):
            two.topic("t").group("billing")  # a group is a work queue
        assert await two.queue("a").pop() == "a"  # existing objects open anywhere
        await c.settle()
        assert _objects(one) == 3
        await admin.delete(one, "queue", "b")
        await c.settle()
        await client.queue("d").push(2)  # room again
        await c.settle()
        assert _objects(two) == 3


async def test_the_object_cap_is_a_node_option_and_a_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_cap_setting("max_objects", DEFAULT_MAX_OBJECTS, tmp_path, monkeypatch)


def test_the_admin_api_uses_the_same_name_rule() -> None:
    assert admin.check_name("q" * MAX_NAME_LENGTH) == "q" * MAX_NAME_LENGTH
    with pytest.raises(admin.AdminError, match=f"limit of {MAX_NAME_LENGTH}"):
        admin.check_name(LONG)

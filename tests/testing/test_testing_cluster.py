"""lazily_queue.testing: in-process clusters for users' tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue import testing
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import ClusterMismatch, Node
from lazily_queue.raft.errors import NodeNotRunning, NoQuorum
from lazily_queue.raft.network import LocalHub


async def test_one_call_gives_a_running_cluster_with_test_settings() -> None:
    async with testing.cluster(3) as c:
        root = c.root
        assert c.ids == ["1", "2", "3"]
        assert [n.node_id for n in c.running] == ["1", "2", "3"]
        leader = await c.leader()
        assert leader.is_leader and c.node(int(leader.node_id)) is leader
        assert all(n.durability == "none" for n in c.running)
        assert leader.status()["members"] == ["1", "2", "3"]
        assert sorted(p.name for p in root.iterdir()) == ["1", "2", "3"]
        followers = await c.followers()
        assert len(followers) == 2 and leader not in followers
    assert not root.exists()  # the temporary data directory is removed
    assert c.running == []


async def test_an_unknown_member_is_named() -> None:
    c = testing.cluster(2)
    try:
        with pytest.raises(KeyError, match=r"no member '7'; the members are \['1', '2'\]"):
            c.node(7)
        with pytest.raises(InvalidConfiguration, match="at least one node"):
            testing.cluster(0)
    finally:
        await c.close()


async def test_unstarted_members_exist_for_wiring_an_application(tmp_path: Path) -> None:
    c = testing.cluster(3, data_dir=tmp_path, op_timeout=4.0)
    nodes = list(c.nodes.values())
    assert [n.running for n in nodes] == [False, False, False]
    assert all(n.op_timeout == 4.0 for n in nodes)
    for node in nodes:  # what an application's startup hook does
        await node.start()
    try:
        await c.wait_for_leader()
        await nodes[0].queue("q").push(1)
        await c.settle()
        assert [n.queue("q").storage.elements() for n in nodes] == [[1]] * 3  # type: ignore[attr-defined]
    finally:
        await c.close()
    assert (tmp_path / "1" / "raft").is_dir()  # a directory the caller gave is kept


async def test_killing_the_leader_elects_another_that_holds_the_data() -> None:
    async with testing.cluster(3) as c:
        old = await c.leader()
        follower = (await c.followers())[0]
        q = follower.queue("jobs")
        await q.push("a")
        await c.kill(old.node_id)
        assert not old.running
        with pytest.raises(NodeNotRunning):
            await old.barrier()
        new = await c.wait_for_leader()
        assert new is not old and new.running
        await q.push("b")
        assert [await q.pop(), await q.pop()] == ["a", "b"]


async def test_a_partitioned_minority_refuses_writes_and_heal_converges() -> None:
    async with testing.cluster(3, op_timeout=3.0) as c:
        leader = await c.leader()
        await leader.queue("q").push("before")
        rest = [m for m in c.ids if m != leader.node_id]
        c.isolate(leader.node_id)
        with pytest.raises(NoQuorum):
            await leader.queue("q").push("refused")
        majority = await c.wait_for_leader(among=rest)
        await majority.queue("q").push("during")
        c.heal()
        await c.settle()
        for node in c.running:
            assert node.view.queues["q"].elements() == ["before", "during"], node.node_id


async def test_partition_by_groups_and_a_one_way_cut() -> None:
    async with testing.cluster(3, op_timeout=3.0) as c:
        leader = await c.leader()
        others = [m for m in c.ids if m != leader.node_id]
        c.partition([leader.node_id], others)
        assert not c.hub.linked(leader.node_id, others[0])
        assert c.hub.linked(others[0], others[1])
        c.heal()
        c.cut_one_way(others[0], others[1])
        assert not c.hub.linked(others[0], others[1])
        assert c.hub.linked(others[1], others[0])
        c.heal()
        await c.settle()


@pytest.mark.parametrize("fresh", [False, True])
async def test_a_restarted_member_gets_its_data_back(fresh: bool) -> None:
    async with testing.cluster(3) as c:
        victim = (await c.followers())[0]
        cell = victim.queue("q")
        await cell.push(1)
        await c.settle()
        await c.kill(victim.node_id)
        await (await c.leader()).queue("q").push(2)  # committed while it was down
        back = await c.restart(victim.node_id, fresh=fresh)
        assert (back is victim) is not fresh
        assert c.node(victim.node_id) is back
        await back.barrier()
        assert back.view.queues["q"].elements() == [1, 2]
        if not fresh:
            assert cell.len() == 2  # cells opened before the restart still read


async def test_restart_of_the_whole_cluster_keeps_acknowledged_pushes(tmp_path: Path) -> None:
    async with testing.cluster(3, data_dir=tmp_path) as c:
        await (await c.leader()).queue("q").push("kept")
    async with testing.cluster(3, data_dir=tmp_path) as again:
        node = await again.leader()
        await node.barrier()
        assert node.view.queues["q"].elements() == ["kept"]


async def test_members_join_and_leave() -> None:
    async with testing.cluster(3) as c:
        await (await c.leader()).queue("q").push("x")
        newcomer = await c.add_member()
        assert newcomer.node_id == "4" and c.ids == ["1", "2", "3", "4"]
        await newcomer.barrier()
        assert newcomer.view.queues["q"].elements() == ["x"]
        with pytest.raises(InvalidConfiguration, match="already a member"):
            await c.add_member(4)
        gone = next(n.node_id for n in await c.followers() if n is not newcomer)
        await c.remove_member(gone)
        assert gone not in c.ids
        assert gone not in (await c.leader()).status()["members"]


async def test_a_leader_that_never_comes_is_reported() -> None:
    c = testing.cluster(3)
    try:
        await c.node(1).start()  # alone: one of three cannot win an election
        with pytest.raises(TimeoutError, match=r"no leader among \['1', '2', '3'\] within 0.5s"):
            await c.wait_for_leader(timeout=0.5)
    finally:
        await c.close()


async def test_a_member_that_cannot_start_is_not_added(tmp_path: Path) -> None:
    async with Node(9, data_dir=tmp_path / "4", network=LocalHub().network("9"),
                    durability="none"):
        pass  # directory 4 now belongs to node 9
    async with testing.cluster(3, data_dir=tmp_path) as c:
        with pytest.raises(ClusterMismatch, match="belongs to node 9"):
            await c.add_member(4)
        assert c.ids == ["1", "2", "3"] and "4" not in c.nodes
        assert (await c.leader()).status()["members"] == ["1", "2", "3"]


async def test_a_lone_member_is_told_why_it_can_neither_leave_nor_hand_over() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
        with pytest.raises(InvalidConfiguration, match="no other member to hand leadership"):
            await node.transfer_leadership()
        with pytest.raises(InvalidConfiguration, match="only member and cannot be removed"):
            await node.remove_member(node.node_id)
        await node.queue("q").push(1)  # the cluster is as it was
    async with testing.cluster(2) as c:
        leader = await c.leader()
        with pytest.raises(InvalidConfiguration, match="cannot hand leadership to itself"):
            await leader.transfer_leadership(leader.node_id)


async def test_a_closed_cluster_says_so_rather_than_wait_for_a_leader() -> None:
    async with testing.cluster(1) as c:
        pass
    for waiting in (c.leader(timeout=0.5), c.followers(timeout=0.5),
                    c.wait_for_leader(timeout=0.5)):
        with pytest.raises(NodeNotRunning, match=r"the test cluster is closed .* use it inside"):
            await waiting

"""``node.add_member`` refuses, with nothing replicated, a member id no node can have, an
address no member could listen on, and an address where another member listens however
spelled: such a voter could never run, yet it would count in the quorum."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import testing
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.node import Node
from tests.raft.test_membership_restart import SECRET, _address, _grown, _node


async def _unchanged(c: testing.Cluster, member: str) -> None:
    """Every member still has members 1, 2 and 3 only, and no address for ``member``."""
    for node in c.running:
        await node.barrier()
        assert sorted(node.driver.replica.engine.members) == ["1", "2", "3"]
        assert node.view.address(member) is None


@pytest.mark.parametrize("member", ["01", "+7", "7 ", "\u00b2", 2**64, "", True])
async def test_an_id_no_node_can_have_is_refused(member: Any) -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        with pytest.raises(InvalidConfiguration, match="id"):
            await leader.add_member(member, "tcp://127.0.0.1:9", timeout=2)
        await _unchanged(c, str(member))


@pytest.mark.parametrize("address", ["127.0.0.1:9", "tcp://", "tcp://h:99999",
                                     "http://127.0.0.1:9", "unix:", "unix:///run/lq/",
                                     "tcp://h:1\nERROR forged", "", 9])
async def test_an_address_no_member_can_listen_on_is_refused(address: Any) -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        with pytest.raises(InvalidConfiguration, match="address"):
            await leader.add_member(7, address, timeout=2)
        await _unchanged(c, "7")


async def test_the_testing_cluster_refuses_such_an_id_before_starting_it(
        tmp_path: Path) -> None:
    async with testing.cluster(3, data_dir=tmp_path) as c:
        with pytest.raises(InvalidConfiguration, match="a member id is an integer"):
            await c.add_member("04")
        assert c.ids == ["1", "2", "3"] and "04" not in c.nodes
        assert not (tmp_path / "04").exists()
        await _unchanged(c, "04")


async def test_another_members_address_in_another_spelling_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Node 1's own listen address and node 2's recorded one, relative or with ``./``;
    then node 3 at its own address joins."""
    monkeypatch.chdir(tmp_path)
    async with _grown(tmp_path, 2) as nodes:
        leader = nodes[0]
        for address, holder in (("unix:n1.sock", 1), (f"unix:{tmp_path}/./n1.sock", 1),
                                ("unix:./n2.sock", 2), (_address(tmp_path, 2), 2)):
            with pytest.raises(InvalidConfiguration,
                               match=f"leads where member {holder} listens"):
                await leader.add_member(3, address, timeout=2)
            await leader.barrier()
            assert sorted(leader.driver.replica.engine.members) == ["1", "2"]
            assert leader.view.address("3") is None
        third: Node = _node(tmp_path, 3, [1, 2, 3])
        nodes.append(third)
        await asyncio.gather(leader.add_member(3, _address(tmp_path, 3), timeout=10),
                             third.start())
        await third.barrier()
        assert sorted(third.driver.replica.engine.members) == ["1", "2", "3"]
        assert third.view.queues["q"].elements() == ["founded"]


async def test_a_moved_member_is_where_the_cluster_recorded_it_not_where_peers_say(
        tmp_path: Path) -> None:
    """Members configured with ``[peers]``; one removed and added back elsewhere: its
    former address (still in the others' ``[peers]``) is free, its new one is not."""
    from lazily_queue.member_checks import addition_problem

    peers = {i: _address(tmp_path, i) for i in (1, 2, 3)}
    nodes = {i: Node(i, data_dir=tmp_path / str(i), listen=peers[i], secret=SECRET,
                     peers=peers) for i in (1, 2, 3)}
    try:
        await asyncio.gather(*(n.start() for n in nodes.values()))
        leader = nodes[1]
        await leader.wait_for_leader()
        leader = nodes[int(str(leader.leader_id))]
        mover = next(i for i in (1, 2, 3) if str(i) != leader.node_id)
        await nodes[mover].stop()
        await leader.remove_member(mover, timeout=10)
        moved = f"unix://{tmp_path}/n{mover}b.sock"
        await leader.add_member(mover, moved, timeout=10)
        assert await addition_problem(leader, "9", peers[mover]) is None
        refused = await addition_problem(leader, "9", moved)
        assert refused is not None and f"leads where member {mover} listens" in refused
    finally:
        for node in nodes.values():
            await node.stop()


async def test_host_names_looked_up_past_the_bound_are_taken_for_other_places(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver that does not answer holds an add for the bound, not for its own
    timeouts: the name is then not another member's place."""
    import socket
    import threading

    from lazily_queue.member_checks import addition_problem

    real, answer = socket.getaddrinfo, threading.Event()

    def stuck(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slowhost":
            answer.wait(60)
            raise socket.gaierror(socket.EAI_AGAIN, "no answer")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stuck)
    try:
        async with testing.cluster(3, durability="none") as c:
            problem = await asyncio.wait_for(addition_problem(
                await c.leader(), "4", "tcp://slowhost:7104", within=0.2), 30)
            assert problem is None
    finally:
        answer.set()

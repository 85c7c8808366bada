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
from tests.raft.test_membership_restart import _address, _grown, _node


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

"""A client whose leader died links again at a pace: the followers name the dead leader
until they elect another, and a client moving to its address at once, failing, and
linking to a follower again would open hundreds of links a second to the members left
(every client of the cluster at once, as the failover runs)."""

from __future__ import annotations

import pytest

from tests.client.test_client_cluster import client_of, cluster_with_clients

pytestmark = pytest.mark.timeout(60)


async def test_a_client_whose_leader_died_does_not_storm_the_followers() -> None:
    async with cluster_with_clients() as (c, addresses):
        leader = (await c.leader()).node_id
        leader_first = sorted(addresses, key=lambda a: not a.endswith(f"-{leader}"))
        async with client_of(leader_first) as client:
            await client.queue("q").push(1)
            assert client.member == leader
            before = client.links
            await c.kill(leader)
            await client.queue("q").push(2)  # through the new leader
            assert client.member not in (None, leader)
            assert client.links - before <= 12, client.links - before
            assert await client.queue("q").pop_many(5) == [1, 2]

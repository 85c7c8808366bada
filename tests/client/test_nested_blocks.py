"""An ``async with`` on a node or client already inside one (a request handler's block
in an app whose lifespan runs it) leaves it running: the outermost block ends it, and
``client = await connect(...)`` followed by one block still closes at that block's end."""

from __future__ import annotations

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, connect
from tests.client.one_member import TOKEN, one_member


async def test_a_nested_block_leaves_the_node_running() -> None:
    node = Node(1, data_dir=None, durability="none", allow_unauthenticated=True,
                listen="memory://nested-blocks")
    async with node:
        await node.wait_for_leader()
        async with node as same:
            assert same is node
            await node.queue("q").push(1)
        assert node.running
        assert await node.queue("q").pop(timeout=5) == 1
    assert not node.running
    async with node:  # started again by a new outermost block
        assert node.running
    assert not node.running


async def test_a_nested_block_leaves_the_client_open() -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])])
    async with one_member(access) as member:
        credentials = Credentials("web", TOKEN)
        async with connect(member.listen or "", credentials) as client:
            async with client:
                await client.queue("q").push(1)
            assert client.session.open
            assert await client.queue("q").pop(timeout=5) == 1
        assert not client.session.open
        awaited = await connect(member.listen or "", credentials)
        async with awaited:
            assert awaited.session.open
        assert not awaited.session.open  # its one block was the outermost

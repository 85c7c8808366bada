"""What a member's refusals tell a client about objects it may not see: a permission
refusal reads the same whether the object exists."""

from __future__ import annotations

import cbor2
import pytest

from lazily_queue import ClientAccess, ClientGrant
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from tests.client.one_member import TOKEN, answers, linked, one_member

pytestmark = pytest.mark.timeout(60)


async def test_a_refusal_says_the_same_whether_a_consumer_group_it_may_not_see_exists(
        ) -> None:
    """The hint about a consumer group's topic comes from the name's form: a client with
    no permission on topic "secret" cannot tell its group "audit" exists from its
    refusals."""
    async with one_member(ClientAccess([ClientGrant("web", TOKEN, produce=["orders.*"])])
                          ) as node:
        for code, args in ((ops.TOPIC_DECLARE, ["secret"]),
                           (ops.GROUP_DECLARE, ["secret", "audit", 1000, 3, "tail"])):
            _, done = node.driver.propose(code, args, timeout=5)
            await done
        stream = await linked(node)
        said: dict[str, list[str]] = {}
        for rid, name in ((10, "secret:audit"), (12, "secret:nothing")):
            await stream.send(cbor2.dumps([rid, P.OP, rid, rid, ops.WORK_CLAIM,
                                           [name, "w", None], 5000]))
            await stream.send(cbor2.dumps([rid + 1, P.WATCH, "work_queue", name]))
            said[name] = [a[2][1].replace(name, "NAME") for a in await answers(stream, 2)]
        assert said["secret:audit"] == said["secret:nothing"], said
        assert all("on topic 'secret'" in text for text in said["secret:audit"])

"""A registered client session id carries its proposer's random nonce: a client of another
member whose name has the same 16-bit tag (each member checks only its own list of
clients for such clashes) cannot guess another client's session, name it in its hello
and end it or act under it."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue import ClientAccess, ClientGrant, Credentials, connect, testing
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import OWNER_SHIFT, owner_tag
from lazily_queue.replicated.session_register import REGISTERED_BASE

pytestmark = pytest.mark.timeout(60)

PREFIX = "memory://session-nonce"
#: A name whose tag is alice's: ``owner_tag("mallory-367854") == owner_tag("alice")``.
MALLORY = "mallory-367854"


def _options(node_id: str) -> dict[str, Any]:
    grants = {"1": [ClientGrant("alice", b"alice-token", produce=["*"], consume=["*"])],
              "2": [ClientGrant(MALLORY, b"mallory-token", consume=["nothing"])]}
    if node_id not in grants:
        return {}
    return {"clients": ClientAccess(grants[node_id], listen=f"{PREFIX}-{node_id}")}


async def test_a_client_sharing_a_tag_on_another_member_cannot_end_a_session() -> None:
    assert owner_tag(MALLORY) == owner_tag("alice")
    async with (testing.cluster(3, node_options=_options),
                connect([f"{PREFIX}-1"], Credentials("alice", "alice-token")) as alice):
        queue = alice.queue("payroll")
        await queue.push("one")
        sid = alice.session.id
        link = await dial(f"{PREFIX}-2", LinkConfig(peer_id=0, session_id="x",
                                                     secret=b"mallory-token",
                                                     credential=MALLORY))
        try:
            for n in range(1, 9):  # the counted ids: what a registration once answered
                guess = REGISTERED_BASE + (owner_tag("alice") << OWNER_SHIFT) + n
                await link.send(cbor2.dumps([n, P.HELLO, P.VERSION, guess]))
                if cbor2.loads(await link.receive())[1] != P.OK:
                    continue
                await link.send(cbor2.dumps([100 + n, P.OP, 1, 0, ops.SESSION_END, [], 5000]))
                answer = cbor2.loads(await link.receive())
                assert "session_unknown" in repr(answer)
        finally:
            await link.aclose()
        await queue.push("two")
        assert alice.session.id == sid
        assert [await queue.pop(), await queue.pop()] == ["one", "two"]

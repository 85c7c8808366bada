"""Clients on a member's listen address: credentials, permissions and bad requests.

A client proves its own token (never the cluster secret); a wrong token, an unknown
client, a permission its token lacks, a malformed or oversized request each get a
typed error, apply nothing, and leave the member serving."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import cbor2
import pytest
from lazily_transports import LinkConfig, LinkStream, dial

from lazily_queue import (
    AccessDenied,
    ClientAccess,
    ClientGrant,
    Credentials,
    Node,
    PermissionDenied,
    RequestRefused,
    connect,
)
from lazily_queue.client import protocol as P
from lazily_queue.client.cluster import ClusterClient
from lazily_queue.errors import InvalidConfiguration, LazilyQueueError, MessageTooLarge
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id, owner_tag

pytestmark = pytest.mark.timeout(60)

WEB, READER = b"token-of-the-web-tier", b"token-of-the-reader"
WORKER = b"token-of-a-consumer"
EVERY = b"token-of-every-permission"
SECRET = b"the-cluster-secret"


@pytest.fixture
async def member(short_tmp: Path) -> AsyncIterator[Node]:
    access = ClientAccess([
        ClientGrant("web", WEB, produce=["jobs", "orders.*"], consume=["jobs"]),
        ClientGrant("reader", READER, consume=["news"]),
        ClientGrant("worker", WORKER, consume=["payments"]),
        ClientGrant("all", EVERY, produce=["*"], consume=["*"], admin=["*"]),
    ])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=SECRET, clients=access)
    async with node:
        await node.wait_for_leader()
        yield node


async def raw_client(node: Node, name: str = "web", token: bytes = WEB) -> LinkStream:
    assert node.listen is not None
    stream = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=token,
                                                credential=name))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id(name)]))
    assert cbor2.loads(await stream.receive())[1] == P.OK
    return stream


async def test_produce_and_consume_permissions_per_name_pattern(member: Node) -> None:
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", WEB)) as web:
        await web.work_queue("jobs").push("a")
        await web.queue("orders.eu").push("b")
        with pytest.raises(PermissionDenied, match="may not open 'payroll': its token lacks"):
            await web.queue("payroll").push("c")
        await web.work_queue("jobs").push("declared: pushes need produce")
        with pytest.raises(PermissionDenied,
                           match=r"may not consume from 'orders\.eu' \(queue_pop_stamped\)"):
            await web.queue("orders.eu").pop()
        with pytest.raises(PermissionDenied, match="work_reap"):
            await web.work_queue("jobs").reap_expired()
    async with connect(member.listen, ("reader", READER)) as reader:
        with pytest.raises(PermissionDenied):
            await reader.topic("news").publish("x")
        await reader.topic("news").subscribe("me")
    await member.barrier()
    assert member.view.queue("payroll") is None  # nothing applied for the refused push
    assert member.view.queue("orders.eu").elements() == ["b"]  # type: ignore[union-attr]


async def test_deleting_a_subscriber_needs_consume_on_the_topic(member: Node) -> None:
    assert member.listen is not None
    await member.topic("orders.eu").subscribe("billing")
    await member.topic("news").subscribe("archive")
    async with connect(member.listen, Credentials("web", WEB)) as web:
        with pytest.raises(PermissionDenied,
                           match=r"may not consume from .* \(topic_delete_subscriber\)"):
            await web.topic("orders.eu").delete_subscriber("billing")  # produce only
    async with connect(member.listen, ("reader", READER)) as reader:
        assert await reader.topic("news").delete_subscriber("archive") is True
    await member.barrier()
    assert sorted(member.topic("orders.eu").subscriptions()) == ["billing"]
    assert member.topic("news").subscriptions() == {}


async def test_unknown_client_and_wrong_token_are_refused_at_connect(member: Node) -> None:
    assert member.listen is not None
    with pytest.raises(AccessDenied, match="unknown client credential 'intruder'") as info:
        await connect(member.listen, ("intruder", WEB), connect_timeout=2).start()
    # the message says what to do, not only what failed
    assert str(info.value).endswith(
        ": the members list no [[client]] named 'intruder': add one to each member's TOML "
        "(or a ClientGrant to Node(clients=...)), or check the name the client passes")
    with pytest.raises(AccessDenied, match="wrong token"):
        await connect(member.listen, ("web", READER), connect_timeout=2).start()
    with pytest.raises(AccessDenied):  # the cluster secret is not a client token
        await connect(member.listen, ("web", SECRET), connect_timeout=2).start()
    assert member.is_leader and member.status()["connected"] == []


async def test_malformed_and_oversized_requests_get_errors_and_apply_nothing(
    member: Node,
) -> None:
    stream = await raw_client(member)
    try:
        answers: list[Any] = []

        async def ask(data: bytes) -> Any:
            await stream.send(data)
            answer = cbor2.loads(await stream.receive())
            answers.append(answer)
            return answer

        assert (await ask(b"\xff\x00garbage"))[:2] == [0, P.ERROR]
        assert (await ask(cbor2.dumps({"not": "a list"})))[2][0] == "refused"
        big = cbor2.dumps([2, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", "x" * 1_100_000], 1000])
        too_large = await ask(big)  # over the cluster's 1 MiB message limit
        assert too_large[:2] == [2, P.ERROR] and too_large[2][0] == "too_large"
        assert too_large[2][3] == member.max_message_bytes
        bad_batch = await ask(cbor2.dumps([0, P.BATCH, [[1, P.PING], "x"]]))
        assert bad_batch[:2] == [0, P.ERROR] and "batch" in bad_batch[2][1]
        bad_op = await ask(cbor2.dumps([3, P.OP, "one", 1, ops.QUEUE_PUSH, [], 1000]))
        assert bad_op[:2] == [3, P.ERROR] and bad_op[2][0] == "refused"
        raft = await ask(cbor2.dumps([4, P.OP, 1, 1, ops.MEMBER_ADDRESS, ["9", "x"], 1000]))
        assert raft[2][0] == "permission"
        nested = await ask(cbor2.dumps([5, P.OP, 1, 1, ops.CLIENT_OP, [1, 2], 1000]))
        assert nested[2][0] == "permission"
        unknown_kind = await ask(cbor2.dumps([6, 99]))
        assert unknown_kind[:2] == [6, P.ERROR]
        ok = await ask(cbor2.dumps([7, P.PING]))
        assert ok == [7, P.OK, None]  # the member still serves this client
    finally:
        await stream.aclose()
    huge = await raw_client(member)  # a frame over the member's cap for client links
    with pytest.raises((anyio.BrokenResourceError, anyio.EndOfStream)):  # closed by the member
        await huge.send(cbor2.dumps([1, P.PING, "x" * 3_000_000]))
        await huge.receive()
    async with connect(member.listen or "", ("web", WEB)) as web:  # others are served
        with pytest.raises(MessageTooLarge, match="exceeds the 1048576-byte limit"):
            await web.queue("jobs").push(b"x" * 1_100_000)
    await member.barrier()
    assert [q.len() for q in member.view.queues.values()] == [0]  # declared, nothing pushed
    assert member.view.work_queues == {}


async def test_a_refused_name_is_shown_shortened(member: Node) -> None:
    """A permission refusal names the object as :func:`shown` does, not the whole name a
    client sent (up to the request limit)."""
    stream = await raw_client(member)
    try:
        name = "z" * 200_000
        await stream.send(cbor2.dumps([1, P.OP, 1, 1, ops.QUEUE_PUSH, [name, 1], 1000]))
        answer = cbor2.loads(await stream.receive())
    finally:
        await stream.aclose()
    assert answer[2][0] == "permission" and len(answer[2][1]) < 300, len(answer[2][1])
    assert answer[2][1].startswith("client 'web' may not push to 'zzzz")
    assert "...zzzz'" in answer[2][1] and "permission for that name" in answer[2][1]
    assert answer[2][1].endswith(  # and how to allow it
        "; to allow it, add a pattern matching the name to its `produce` or `admin` list in "
        "each member's [[client]] table (ClientGrant)"), answer[2][1]


async def test_a_floor_above_its_op_is_refused_and_the_session_goes_on(member: Node) -> None:
    """A floor says every op below it was answered, so it is never above the op's own
    seq: a larger one (2**4000 would be kept by the session, every later op then
    answered as a duplicate, never applied) is refused before anything is proposed."""
    await member.queue("jobs").push(0)
    stream = await raw_client(member)
    try:
        for rid, floor in ((1, 2**4000), (2, 2**63), (3, 2)):
            await stream.send(cbor2.dumps([rid, P.OP, 1, floor, ops.QUEUE_PUSH, ["jobs", 1],
                                           1000]))
            answer = cbor2.loads(await stream.receive())
            assert answer[:2] == [rid, P.ERROR] and answer[2][0] == "refused", answer
            assert "0 <= floor <= seq" in answer[2][1]
        for rid, seq in ((4, 1), (5, 2)):
            await stream.send(cbor2.dumps([rid, P.OP, seq, seq, ops.QUEUE_PUSH,
                                           ["jobs", seq], 1000]))
            assert cbor2.loads(await stream.receive())[:2] == [rid, P.OK]
    finally:
        await stream.aclose()
    await member.barrier()
    assert member.queue("jobs").len() == 3  # 0, then 1 and 2 applied once each


async def test_an_op_before_hello_and_a_bad_session_are_refused(member: Node) -> None:
    assert member.listen is not None
    stream = await dial(member.listen, LinkConfig(peer_id=0, session_id="x", secret=WEB,
                                                  credential="web"))
    try:
        await stream.send(cbor2.dumps([1, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", 1], 1000]))
        assert "HELLO" in cbor2.loads(await stream.receive())[2][1]
        await stream.send(cbor2.dumps([2, P.HELLO, P.VERSION, 12]))  # a member's session
        assert cbor2.loads(await stream.receive())[2][0] == "refused"
        # another client's session id: a client can only ever drop its own sessions
        await stream.send(cbor2.dumps([3, P.HELLO, P.VERSION, new_session_id("admin")]))
        answer = cbor2.loads(await stream.receive())
        assert answer[2][0] == "refused" and "not tagged as client 'web'" in answer[2][1]
        await stream.send(cbor2.dumps([4, P.HELLO, 2, new_session_id("web")]))  # older client
        answer = cbor2.loads(await stream.receive())
        assert answer[2][0] == "refused" and "upgrade the client to" in answer[2][1]
        await stream.send(cbor2.dumps([4, P.HELLO, P.VERSION + 1, new_session_id("web")]))
        answer = cbor2.loads(await stream.receive())
        assert answer[2][0] == "refused" and "upgrade the members to" in answer[2][1]
        await stream.send(cbor2.dumps([40, P.OP, 1, 1, ops.QUEUE_PUSH, ["jobs", 1], 1000]))
        answer = cbor2.loads(await stream.receive())  # an op after it says why
        assert answer[2][0] == "refused" and "its HELLO was refused: this member" in answer[2][1]
        await stream.send(cbor2.dumps([5, P.HELLO, P.VERSION, new_session_id("web")]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
    finally:
        await stream.aclose()


def test_grants_and_credentials_refuse_bad_configuration() -> None:
    with pytest.raises(InvalidConfiguration, match="at least 8 bytes"):
        Credentials("web", b"short")
    with pytest.raises(InvalidConfiguration, match="client name"):
        Credentials("has space", WEB)
    with pytest.raises(InvalidConfiguration, match="list of name patterns"):
        ClientGrant("web", WEB, produce="jobs")
    with pytest.raises(InvalidConfiguration, match="listed twice"):
        ClientAccess([ClientGrant("web", WEB), ClientGrant("web", READER)])
    assert "token" not in repr(ClientGrant("web", WEB)) or "..." in repr(Credentials("w", WEB))
    assert WEB.decode() not in repr(Credentials("web", WEB))


@pytest.mark.parametrize("options", [
    {"listen": "http://127.0.0.1:8101"},
    {"listen": "tcp://127.0.0.1:0", "peers": {2: "http://127.0.0.1:8102"}},
    {"listen": "tcp://127.0.0.1:0", "peers": {2: "bogus://x"}},
    {"clients": "http://127.0.0.1:8101"},
])
def test_an_address_of_no_transport_is_a_configuration_error(options: dict[str, Any]) -> None:
    """Raised at construction as the package's error (code catching LazilyQueueError
    sees it), naming the argument and the schemes served."""
    with pytest.raises(LazilyQueueError, match=r"address.*: no transport for scheme "
                       r"'(http|bogus)' \(known: memory, tcp, tls, unix") as info:
        if "clients" in options:
            ClientAccess([ClientGrant("web", WEB)], listen=[options["clients"]])
        else:
            Node(1, data_dir=None, durability="none", secret=SECRET, **options)
    assert isinstance(info.value, InvalidConfiguration)


def test_clients_whose_names_share_a_session_tag_are_refused() -> None:
    """A member tells a client's sessions from another's only by the 16-bit tag of its
    name (registered ids count up, so they are easy to guess): two clients of one tag
    could each name the other's session, read the results kept for its retries and
    have its next ops answered as duplicates, never applied."""
    assert owner_tag("web") == owner_tag("tenant-104578")
    with pytest.raises(InvalidConfiguration, match=r"'web' and 'tenant-104578' have the same"):
        ClientAccess([ClientGrant("web", WEB, produce=["jobs"]),
                      ClientGrant("tenant-104578", READER, consume=["news"])])
    assert sorted(ClientAccess([ClientGrant("web", WEB),
                                ClientGrant("tenant-104579", READER)]).grants) == [
        "tenant-104579", "web"]


@pytest.mark.parametrize(("promotion", "open_op"), [(ops.QUEUE_PROMOTE, ops.QUEUE_POP),
                                                     (ops.WORK_PROMOTE, ops.WORK_CLAIM)])
def test_no_client_may_propose_a_promotion(promotion: int, open_op: int) -> None:
    everything = ClientGrant("ops", WEB, produce=["*"], consume=["*"], admin=["*"])
    consumer = ClientGrant("web", WEB, consume=["jobs"])
    for grant in (everything, consumer):
        refusal = grant.refusal(promotion, "jobs")
        assert refusal is not None and "not open to clients" in refusal
    assert consumer.refusal(open_op, "jobs") is None


async def test_a_client_promoting_delayed_work_is_refused_and_nothing_moves(
        member: Node) -> None:
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", WEB)) as web:
        jobs = web.work_queue("jobs")
        await jobs.push("later", delay=3_600)
        with pytest.raises(PermissionDenied, match="not open to clients"):
            await jobs.promote_due()
    await member.barrier()
    state = member.view.work_queue("jobs")
    assert state is not None
    assert (state.core.pending_len(), state.core.delayed_len()) == (0, 1)


async def test_a_member_refuses_malformed_ops_before_they_reach_the_log(
    member: Node, caplog: pytest.LogCaptureFixture,
) -> None:
    assert member.listen is not None
    async with connect(member.listen, ("all", EVERY)) as client:
        await client.work_queue("w").push("job")
        await client.topic("t").publish("news")
    malformed = [
        (ops.QUEUE_DECLARE, ["q", None, "extra"]),
        (ops.WORK_ACK, ["w", "worker", {"a": 1}]),
        (ops.WORK_RELEASE, ["w", "worker", [{"a": 1}]]),
        (ops.WORK_CLAIM, ["w", "worker", math.inf]),
        (ops.TOPIC_SUBSCRIBE, ["t", "reader", "w"]),
        (ops.TOPIC_ADVANCE, ["t"]),
        (ops.TXN, [[ops.WORK_PUSH, "w", 1], [ops.WORK_PUSH_OPTIONS, "w", {}, math.nan, 2]]),
    ]
    applied_before = member.view.applied_ops
    stream = await raw_client(member, "all", EVERY)
    try:
        with caplog.at_level(logging.WARNING):
            for rid, (code, args) in enumerate(malformed, start=2):
                await stream.send(cbor2.dumps([rid, P.OP, rid, rid - 1, code, args, 1000]))
                answer = cbor2.loads(await stream.receive())
                assert answer[:2] == [rid, P.ERROR] and answer[2][0] == "refused", answer
                assert ops.op_name(code) in answer[2][1]
                assert "nothing was applied" in answer[2][1]
            await stream.send(cbor2.dumps([99, P.PING]))
            assert cbor2.loads(await stream.receive()) == [99, P.OK, None]
    finally:
        await stream.aclose()
    await member.barrier()
    assert member.view.applied_ops == applied_before + 1  # the barrier only
    assert not [r for r in caplog.records if "failed while applying" in r.getMessage()]
    assert member.view.work_queues["w"].core.pending_len() == 1
    assert member.topic("t").subscriptions() == {}


async def test_expiry_rules_on_an_object_that_held_elements_need_admin(member: Node) -> None:
    assert member.listen is not None
    orders, news = member.queue("orders.eu"), member.topic("news")
    await news.subscribe("archive")
    for i in range(3):
        await orders.push(i)
        await news.publish(i)
    async with connect(member.listen, Credentials("web", WEB)) as web:
        with pytest.raises(PermissionDenied, match=r"expiry rules of queue 'orders\.eu'.*admin"):
            await web.queue("orders.eu", ttl=0.001).push("x")
        fresh = web.queue("orders.new", ttl=60)  # a new object takes its opener's rules
        await fresh.push("y")
        await web.queue("orders.new", ttl=60).push("z")  # the same rules again
        await web.queue("orders.new").push("w")  # or none
    async with connect(member.listen, Credentials("reader", READER)) as reader:
        with pytest.raises(PermissionDenied, match="expiry rules of topic 'news'"):
            await reader.topic("news", max_age=0.001).subscribe("me")
    async with connect(member.listen, Credentials("all", EVERY)) as admin:
        await admin.queue("orders.eu", ttl=600).push(3)
    await member.barrier()
    assert orders.len() == 4 and len(member.view.topics["news"].elements()) == 3
    assert member.view.expiry[("queue", "orders.new")].rules() == [60_000, None]
    assert member.view.expiry[("queue", "orders.eu")].rules() == [600_000, None]
    assert ("topic", "news") not in member.view.expiry or (
        member.view.expiry[("topic", "news")].rules() == [None, None])


async def test_a_consume_only_client_gives_back_only_what_it_popped(member: Node) -> None:
    assert member.listen is not None
    payments = member.queue("payments", capacity=3)
    for i in range(3):
        await payments.push({"pay": i})
    forged = {"pay": 10**6, "to": "mallory"}
    async with connect(member.listen, Credentials("worker", WORKER)) as worker:
        for code, args in ((ops.QUEUE_UNPOP_MANY, ["payments", [forged]]),
                           (ops.QUEUE_UNPOP, ["payments", forged])):
            with pytest.raises(PermissionDenied, match="lacks the admin permission"):
                await worker.session.call(code, args, timeout=5)
        queue = worker.queue("payments", capacity=3)
        taken = await queue.pop_messages(2)
        assert [m.value for m in taken] == [{"pay": 0}, {"pay": 1}]
        first = taken[0]
        runs = [[first.id, 1, 0]]
        with pytest.raises(PermissionDenied, match="only elements its session popped"):
            await worker.session.call(ops.QUEUE_UNPOP_STAMPED, ["payments", [forged], runs],
                                      timeout=5)
        never = [[first.id + 2, 1, 0]]  # still in the queue: not popped by this client
        with pytest.raises(PermissionDenied, match="only elements its session popped"):
            await worker.session.call(ops.QUEUE_UNPOP_STAMPED,
                                      ["payments", [{"pay": 2}], never], timeout=5)
        await queue.give_back(taken)  # as popped: taken back
        with pytest.raises(PermissionDenied, match="only elements its session popped"):
            await queue.give_back(taken[:1])  # not twice
        async with contextlib.aclosing(queue.items(prefetch=3)) as items:
            async for value in items:  # a prefetch's rest goes back
                assert value == {"pay": 0}
                break
    await member.barrier()
    assert payments.len() == 2
    assert [await payments.pop() for _ in range(2)] == [{"pay": 1}, {"pay": 2}]


async def test_a_client_makes_no_new_group_whose_name_has_the_separator(member: Node) -> None:
    assert member.listen is not None
    news = member.topic("news")
    await news.group("audit:eu").declare()  # a member may; the client then uses it
    await news.publish("a")
    async with connect(member.listen, Credentials("reader", READER)) as reader:
        with pytest.raises(P.RequestRefused, match="may not have ':' in its name"):
            await reader.topic("news").group("b:c").declare()
        job = await reader.topic("news").group("audit:eu").claim("w")
        assert job is not None and job.value == "a"
        await reader.topic("news").group("billing").declare()
    await member.barrier()
    assert set(member.view.groups["news"]) == {"audit:eu", "billing"}


async def test_a_settlement_naming_one_delivery_many_times_is_refused_unproposed(
        member: Node) -> None:
    """Each repeat of a settled delivery is answered with its receipt: one op naming it a
    million times held every member seconds in its apply, its result kept in the
    client's session."""
    assert member.listen is not None
    work = member.work_queue("payments", visibility_timeout=60)
    await work.push({"pay": 1})
    async with connect(member.listen, Credentials("worker", WORKER)) as worker:
        assert isinstance(worker, ClusterClient)
        jobs = worker.work_queue("payments", visibility_timeout=60)
        delivery = await jobs.claim("me")
        assert delivery is not None
        await jobs.ack("me", delivery.delivery_id)
        with pytest.raises(RequestRefused, match="name one delivery more than once"):
            await worker.session.call(ops.WORK_SETTLE_MANY, [
                "payments", "me", "acked", [delivery.delivery_id] * 10_000], timeout=5)

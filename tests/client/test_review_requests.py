"""An outside review of what a member does with hostile or malformed client requests:
each gets a typed answer, leaves the link served and gives its slots back, so a client
cannot make its member serve nobody; and of large answers: a client that reads them is
not taken for one that does not read its answers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import cbor2
import pytest
from lazily_transports import LinkConfig, LinkStream, dial

from lazily_queue import ClientAccess, ClientGrant, Credentials, Node, connect
from lazily_queue.client import barrier as barrier_module
from lazily_queue.client import connection as connection_module
from lazily_queue.client import dialling as dialling_module
from lazily_queue.client import protocol as P
from lazily_queue.client import server as server_module
from lazily_queue.client import watchers as watchers_module
from lazily_queue.client.connection import ClientConnection
from lazily_queue.client.outbox import Outbox
from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id
from tests.client.test_client_cluster import client_of, cluster_with_clients
from tests.client.test_client_fairness import _until

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-the-web-tier"
#: Slots of the member's whole budget (no reserve for light clients at this size).
TOTAL = 3


@pytest.fixture
async def member(short_tmp: Path, request: pytest.FixtureRequest) -> AsyncIterator[Node]:
    """A member whose clients have ``TOTAL`` slots in all (or the indirect parameter's)."""
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
                          max_total_in_flight=getattr(request, "param", TOTAL))
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access)
    async with node:
        await node.wait_for_leader()
        yield node


async def _linked(node: Node, session: int | None = None) -> LinkStream:
    assert node.listen is not None
    stream = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=TOKEN,
                                                credential="web"))
    await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, session or new_session_id("web")]))
    assert cbor2.loads(await stream.receive())[1] == P.OK
    return stream


async def _ask(stream: LinkStream, request: list[Any]) -> list[Any]:
    await stream.send(cbor2.dumps(request))
    return cbor2.loads(await stream.receive())  # type: ignore[no-any-return]


@pytest.mark.parametrize("code", [[ops.QUEUE_PUSH], {"op": ops.QUEUE_PUSH}],
                         ids=["list", "map"])
async def test_a_transaction_whose_op_code_is_not_a_number_is_refused_and_served_on(
    member: Node, code: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    server = member.clients
    assert server is not None
    for _ in range(TOTAL + 1):  # more than the member's whole budget
        stream = await _linked(member, new_session_id("web"))
        try:
            answer = await _ask(stream, [2, P.OP, 1, 0, ops.TXN, [[code, "jobs", 1]], 1000])
            assert answer[:2] == [2, P.ERROR] and answer[2][0] == "permission"
            assert "a transaction carries" in answer[2][1]
            assert await _ask(stream, [3, P.PING]) == [3, P.OK, None]  # still served
        finally:
            await stream.aclose()
    assert server.stats()["in_flight"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=5) as client:
        await client.queue("jobs").push("served")  # the member still serves its clients
    assert member.view.queue("jobs").elements() == ["served"]  # type: ignore[union-attr]


async def test_refused_names_are_not_kept_by_the_member(member: Node) -> None:
    server = member.clients
    assert server is not None
    stream = await _linked(member)
    try:  # a client may not run what the grant never opens, on names of any length
        for rid in range(2, 10):
            name = f"{rid}" * 200_000
            answer = await _ask(stream, [rid, P.OP, rid, 0, ops.WORK_REAP, [name, None], 1000])
            assert answer[:2] == [rid, P.ERROR] and answer[2][0] == "permission"
        (conn,) = server._conns
        kept = sum(len(name) for _code, name in conn.refusals if isinstance(name, str))
        assert kept < 200_000  # what it checked once is not held for the link's life
    finally:
        await stream.aclose()


async def test_a_link_keeps_a_bounded_text_of_checked_names(member: Node) -> None:
    server = member.clients
    assert server is not None
    stream = await _linked(member)
    try:  # refused names of 1,000 wide characters: 4 KB each however few the entries
        for rid in range(2, 202):
            name = f"{rid}" + "\u0416" * 1000
            answer = await _ask(stream, [rid, P.OP, rid, 0, ops.WORK_REAP, [name, None], 1000])
            assert answer[:2] == [rid, P.ERROR] and answer[2][0] == "permission"
        (conn,) = server._conns
        kept = sum(len(name) + len(found or "") for (_code, name), found in conn.refusals.items()
                   if isinstance(name, str))
        assert 0 < kept <= 64 * 1024 and kept == conn.cached_chars
    finally:
        await stream.aclose()


class _CountPauses:
    """``asyncio`` as the client sees it, except that its pauses are recorded and last
    no time."""

    def __init__(self, pauses: list[float]) -> None:
        self._pauses = pauses

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, delay: float) -> None:
        self._pauses.append(delay)
        await asyncio.sleep(0)


async def test_a_client_whose_member_refuses_its_session_backs_off(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*_args: Any) -> None:
        raise P.RequestRefused("hello must be [id, HELLO, 3, session]")  # another version

    monkeypatch.setattr(server_module.ClientServer, "_hello", refuse)
    pauses: list[float] = []
    monkeypatch.setattr(dialling_module, "asyncio", _CountPauses(pauses))
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", TOKEN)) as client:
        await _until(lambda: client.links >= 6, "linked again and again")
        links = client.links
    assert len(pauses) >= links - 2  # a pause after each refused session ...
    assert pauses[:4] == sorted(pauses[:4]) and pauses[3] > pauses[0]  # ... growing


async def test_a_client_without_a_grant_watching_a_long_group_name_is_refused_at_once(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, consume=["news"])])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access)
    checks: list[int] = []
    real = ClientGrant.refusal

    def counted(self: ClientGrant, code: int, name: str | None) -> str | None:
        checks.append(len(name or ""))
        return real(self, code, name)

    monkeypatch.setattr(ClientGrant, "refusal", counted)
    async with node:
        await node.wait_for_leader()
        stream = await _linked(node)
        try:
            answer = await _ask(stream, [2, P.WATCH, "work_queue", "jobs" + ":" * 20_000])
            assert answer[:2] == [2, P.ERROR] and answer[2][0] == "permission"
        finally:
            await stream.aclose()
    assert len(checks) <= 20  # not one check (and one copy of the name) per ':'
    assert sum(checks) <= 20 * 20_004

class _ParkAtYield:
    """``asyncio`` as the client server sees it, except that its yield between a frame's
    requests parks the serving task there (until it is cancelled)."""

    def __init__(self, parked: asyncio.Event) -> None:
        self._parked = parked

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    async def sleep(self, _delay: float) -> None:
        self._parked.set()
        await asyncio.Event().wait()


@pytest.mark.parametrize("member", [1024], indirect=True)
async def test_a_member_stopped_mid_frame_gives_back_the_slots_of_the_ops_it_read(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = member.clients
    assert server is not None
    parked = asyncio.Event()
    stream = await _linked(member)
    monkeypatch.setattr(server_module, "asyncio", _ParkAtYield(parked))
    count = server_module.YIELD_EVERY + 8
    frame = [0, P.BATCH, [[10 + i, P.OP, 1 + i, 0, ops.QUEUE_PUSH, ["jobs", i], 5000]
                          for i in range(count)]]
    await stream.send(cbor2.dumps(frame))
    await parked.wait()  # the ops read so far wait for the frame's end, holding slots
    assert server.stats()["in_flight"] == server_module.YIELD_EVERY
    await member.stop()
    monkeypatch.undo()
    assert server.stats()["in_flight"] == 0  # the same server serves the restarted member


async def test_a_request_failing_in_a_way_no_check_foresaw_is_refused_and_served_on(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = member.clients
    assert server is not None

    def broken(*_args: Any) -> None:
        raise RuntimeError("a defect in the member")

    monkeypatch.setattr(ClientConnection, "read_refusal", broken)
    stream = await _linked(member)
    try:
        for rid in range(2, 2 + TOTAL + 1):  # more than the member's whole budget
            answer = await _ask(stream, [rid, P.WATCH, "queue", "jobs"])
            assert answer[:2] == [rid, P.ERROR] and answer[2][0] == "refused"
            assert "RuntimeError" in answer[2][1] and "nothing was applied" in answer[2][1]
        assert await _ask(stream, [9, P.PING]) == [9, P.OK, None]
    finally:
        await stream.aclose()
    assert server.stats()["in_flight"] == 0


# -- answers a client reads, or does not -------------------------------------------------


@pytest.mark.parametrize("member", [1024], indirect=True)
async def test_an_object_larger_than_a_clients_answer_queue_is_mirrored(
    member: Node,
) -> None:
    element = 1_000_000
    count = connection_module.MAX_OUTBOX_BYTES // element + 4
    big = member.queue("big")
    for start in range(0, count, 8):
        await asyncio.gather(*(big.push("x" * element)
                               for _ in range(start, min(count, start + 8))))
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=30) as client:
        q = client.queue("big")
        assert q.len() == 0  # mirroring starts with this read
        await client.barrier(timeout=30)
        assert q.len() == count
        assert client.links == 1  # never disconnected as a client that does not read


@pytest.mark.parametrize("member", [1024], indirect=True)
async def test_objects_read_together_beyond_the_answer_queue_are_mirrored(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client reading many objects at once (as after a relink) whose states together
    exceed what a member queues for it gets them all, never cut off as one that does
    not read."""
    monkeypatch.setattr(connection_module, "MAX_OUTBOX_BYTES", 4 * 2**20)
    element, queues = 256 * 1024, 48
    for i in range(queues):
        await member.queue(f"big{i}").push("x" * element)
    assert member.listen is not None
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=30) as client:
        cells = [client.queue(f"big{i}") for i in range(queues)]
        assert [cell.len() for cell in cells] == [0] * queues  # all watched at once
        await client.barrier(timeout=30)
        assert [cell.len() for cell in cells] == [1] * queues
        assert client.links == 1


async def test_a_client_that_does_not_read_is_served_no_more_states_then_disconnected(
    member: Node, caplog: pytest.LogCaptureFixture,
) -> None:
    """States go out one at a time at the pace the client reads them: a client that
    reads nothing gets one, its other watches wait, and it is disconnected once what
    else it has not read (the ops applied to what it watches) passes the limit."""
    element = 1_000_000
    count = 8
    big = member.queue("big")
    await asyncio.gather(*(big.push("x" * element) for _ in range(count)))
    server = member.clients
    assert server is not None
    stream = await _linked(member)
    try:
        served = server.requests
        (conn,) = server._conns
        read = conn.frames_read
        for rid in range(2, 12):
            await stream.send(cbor2.dumps([rid, P.WATCH, "queue", "big"]))  # never read
        await _until(lambda: conn.frames_read >= read + 2 and conn.blocked,
                     "the second watch read and waiting")
        assert server.requests == served + 1  # the others wait for the state to go out
        assert conn.frames_read == read + 2
        assert conn.outbox.queued <= count * element + P.REQUEST_OVERHEAD
        for _ in range(connection_module.MAX_OUTBOX_BYTES // element // 8 + 1):
            if not server.stats()["connections"]:
                break
            await asyncio.gather(*(big.push("y" * element) for _ in range(8)))
        await _until(lambda: not server.stats()["connections"], "the client disconnected")
    finally:
        await stream.aclose()
    assert "does not read its answers" in caplog.text
    assert server.stats()["watched"] == 0


class _Stuck:
    """A link whose other end never reads."""

    def send_nowait(self, _data: bytes) -> None:
        raise anyio.WouldBlock

    async def send(self, _data: bytes) -> None:
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        pass


async def test_one_frame_over_the_limit_waits_and_a_second_one_overflows() -> None:
    limit = 1000
    overflows: list[int] = []
    outbox = Outbox(_Stuck(), limit=limit, on_overflow=overflows.append)  # type: ignore[arg-type]
    outbox.send_oversized([b"x" * limit, b"y" * limit])  # a large object's state
    outbox.send(b"z" * (limit // 2))  # answers go on while it waits
    assert not outbox.closed and not overflows
    outbox.send_oversized([b"w" * (limit + 1)])  # another before the first went out
    assert outbox.closed and overflows == [2 * limit + limit // 2 + limit + 1]
    await outbox.wait_closed()


async def test_a_link_watches_a_bounded_number_of_objects(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watchers_module, "MAX_WATCHES", 3)
    monkeypatch.setattr(watchers_module, "MAX_WATCHED_NAME_BYTES", 2_000)
    stream = await _linked(member)
    try:
        for rid, name in enumerate(("a", "b", "c", "a"), start=2):  # "a" again: no more
            assert (await _ask(stream, [rid, P.WATCH, "queue", name]))[1] == P.OK
        answer = await _ask(stream, [6, P.WATCH, "queue", "d"])
        assert answer[:2] == [6, P.ERROR] and answer[2][0] == "refused"
        assert "at most 3 objects" in answer[2][1] and "reads 3 already" in answer[2][1]
        assert (await _ask(stream, [7, P.UNWATCH, "queue", "b"]))[1] == P.OK
        assert (await _ask(stream, [8, P.WATCH, "queue", "d"]))[1] == P.OK
        assert (await _ask(stream, [9, P.UNWATCH, "queue", "d"]))[1] == P.OK
        answer = await _ask(stream, [10, P.WATCH, "queue", "x" * 1_999])  # the names' bytes
        assert answer[2][0] == "refused" and "MiB in all" in answer[2][1]
        assert (await _ask(stream, [11, P.WATCH, "queue", "x" * 1_990]))[1] == P.OK
    finally:
        await stream.aclose()


async def test_an_object_larger_than_a_client_reads_is_refused_without_relinking(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Its state would be more than the client reassembles: the member answers the read
    with an error instead, and the client stays linked (no relink loop)."""
    monkeypatch.setattr(P, "MAX_ASSEMBLED_BYTES", 200_000)
    async with cluster_with_clients() as (c, addresses), client_of(addresses) as client:
        member_q = c.node(1).queue("huge")
        for _ in range(40):
            await member_q.push(b"x" * 10_000)
        await c.node(1).queue("small").push(1)
        await client.barrier()  # linked to the leader
        links = client.links
        q, small = client.queue("huge"), client.queue("small")
        assert len(q) == 0 and len(small) == 0  # the reads start mirroring
        await client.barrier()
        await client.barrier()
        assert small.len() == 1  # a small object is mirrored as ever
        assert q.len() == 0 and client.links == links  # refused once, never relinked
        assert "more than a client reads (200,000)" in caplog.text


async def test_a_barrier_a_member_never_answers_ends_with_commit_timeout(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client bounds its wait for a member's answer to a barrier: a member that never
    answers one is a :class:`CommitTimeout` shortly after the barrier's timeout, not a
    hang."""
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=30) as client:
        await client.barrier(timeout=5)  # answered as ever
        monkeypatch.setattr(server_module.ClientServer, "_barrier",
                            lambda self, conn, rid, frame: True)  # taken, never answered
        monkeypatch.setattr(barrier_module, "BARRIER_GRACE", 0.2)
        started = asyncio.get_running_loop().time()
        with pytest.raises(CommitTimeout, match=(
                r"^barrier: member 1 did not answer before its timeout \(0.5 s\)$")):
            async with asyncio.timeout(5):  # a hang fails the test, not the run
                await client.barrier(timeout=0.5)
        assert asyncio.get_running_loop().time() - started < 5
        assert client.links == 1  # the link itself is fine


async def test_a_barrier_its_member_answers_with_a_failed_commit_raises_that_error(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member's error for a barrier carries details past its code and message (an
    operation's ``applied``, as a commit timeout's): the client raises that error, typed,
    rather than failing to read the answer."""
    def barrier(self: Any, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        conn.send([rid, P.ERROR, P.error_payload(CommitTimeout(
            "the barrier did not commit within its timeout", applied=False))])
        return False

    monkeypatch.setattr(server_module.ClientServer, "_barrier", barrier)
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=30) as client:
        with pytest.raises(CommitTimeout, match="did not commit within its timeout") as info:
            async with asyncio.timeout(10):  # a hang fails the test, not the run
                await client.barrier(timeout=5)
        assert info.value.applied is False


async def test_a_barrier_its_member_refuses_for_now_is_made_again_on_the_next_link(
    member: Node, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member that answers a barrier with a refusal worth retrying (no quorum yet, as
    while a new cluster elects its leader) is left, and the barrier is made on the next
    link and answered there, however the old link's end and the retry interleave."""
    real = server_module.ClientServer._barrier
    refused: list[int] = []

    def barrier(self: Any, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        if len(refused) < 3:
            refused.append(rid)
            conn.send([rid, P.ERROR, ["no_quorum", "no quorum: an election is under way"]])
            return False
        return real(self, conn, rid, frame)

    monkeypatch.setattr(server_module.ClientServer, "_barrier", barrier)
    async with connect(member.listen, Credentials("web", TOKEN), op_timeout=30) as client:
        async with asyncio.timeout(10):  # a hang fails the test, not the run
            await client.barrier(timeout=8)
        assert len(refused) == 3
        assert client.links == 4  # left after each refusal

"""A consume-only client gives back to a queue only what it popped from that queue.

The member takes what a pop handed out from the answer to that very request and only
when the pop's sequence number was its own: a session answers a number used before
with the first op's result, and a request id is the client's to choose, so a pop of
the consume-only queue sent under the number (or the id) of a pop from a queue the
client may push to would otherwise let it put values of its choosing at the head of the
queue it may only consume."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, LinkStream, dial
from lazily_transports.safe_cbor import TUPLE_TAG

from lazily_queue import ClientAccess, ClientGrant, Node
from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-a-consumer-with-a-scratch-queue"
FORGED = {"pay": 10**6, "to": "mallory"}


@pytest.fixture
async def member(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Node]:
    path = Path(tmp_path_factory.mktemp("gb", numbered=True))
    grant = ClientGrant("mallory", TOKEN, produce=["scratch"], consume=["payments", "scratch"])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{path}/n.sock",
                secret=b"the-cluster-secret", clients=ClientAccess([grant]))
    async with node:
        await node.wait_for_leader()
        payments = node.queue("payments", capacity=2)
        async with node.transaction() as tx:  # one entry: one stamp, one run (a push_many
            tx.push(payments, {"pay": 0})     # to a queue with a capacity pushes one at a
            tx.push(payments, {"pay": 1})     # time: two entries, two stamps at times)
        await node.queue("scratch").push(FORGED)
        yield node


class _Raw:
    """Hand-made request frames on one client link."""

    def __init__(self, stream: LinkStream, session: int) -> None:
        self.stream, self.session = stream, session
        self.rids = itertools.count(10)
        self.answers: dict[int, list[Any]] = {}

    @classmethod
    async def open(cls, node: Node, session: int | None = None) -> _Raw:
        assert node.listen is not None
        stream = await dial(node.listen, LinkConfig(peer_id=0, session_id="x", secret=TOKEN,
                                                    credential="mallory"))
        raw = cls(stream, session or new_session_id("mallory"))
        await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, raw.session]))
        assert (await raw.answer(1))[1] == P.OK
        return raw

    def op(self, seq: int, code: int, args: list[Any], rid: int | None = None) -> list[Any]:
        return [rid or next(self.rids), P.OP, seq, 0, code, args, 10_000]

    async def send(self, *frames: list[Any]) -> None:
        await self.stream.send(cbor2.dumps(frames[0] if len(frames) == 1
                                           else [0, P.BATCH, list(frames)]))

    async def answer(self, rid: int) -> list[Any]:
        while rid not in self.answers:
            frame = cbor2.loads(await self.stream.receive())
            for one in frame[2] if frame[:2] == [0, P.BATCH] else [frame]:
                self.answers.setdefault(one[0], []).append(one)
        found: list[Any] = self.answers[rid].pop(0)
        if not self.answers[rid]:
            del self.answers[rid]
        return found

    async def call(self, seq: int, code: int, args: list[Any]) -> list[Any]:
        frame = self.op(seq, code, args)
        await self.send(frame)
        return await self.answer(frame[0])

    async def give_back(self, seq: int, popped: list[Any]) -> list[Any]:
        """Gives back to ``payments`` what an answer to a pop handed out."""
        assert popped[1] == P.OK, popped
        values, runs = popped[2][1]
        return await self.call(seq, ops.QUEUE_UNPOP_STAMPED, ["payments", values, runs])


async def _payments_untouched(node: Node) -> None:
    await node.barrier()
    queue = node.queue("payments", capacity=2)
    assert [await queue.pop() for _ in range(queue.len())] == [{"pay": 0}, {"pay": 1}]


async def test_a_pop_under_the_number_of_an_earlier_pop_gives_nothing_back(
        member: Node) -> None:
    raw = await _Raw.open(member)
    first = await raw.call(5, ops.QUEUE_POP_STAMPED, ["scratch", 1])
    assert first[2][1][0] == [FORGED]
    again = await raw.call(5, ops.QUEUE_POP_STAMPED, ["payments", 1])  # another op, seq 5
    assert again[2][:2] == [3, "seq_reused"]  # not scratch's result as if from payments
    refused = await raw.give_back(6, first)
    assert refused[1] == P.ERROR and refused[2][0] == "permission"
    await _payments_untouched(member)


async def test_a_pop_sharing_its_number_or_id_in_one_frame_gives_nothing_back(
        member: Node) -> None:
    raw = await _Raw.open(member)
    scratch, payments = raw.op(7, ops.QUEUE_POP_STAMPED, ["scratch", 1], rid=50), \
        raw.op(7, ops.QUEUE_POP_STAMPED, ["payments", 1], rid=51)
    await raw.send(scratch, payments)
    assert (await raw.answer(51))[2][:2] == [3, "seq_reused"]
    refused = await raw.give_back(8, await raw.answer(50))
    assert refused[1] == P.ERROR and refused[2][0] == "permission"
    await member.queue("scratch").push(FORGED)
    same_id = [raw.op(9, ops.QUEUE_POP_STAMPED, ["scratch", 1], rid=60),
               raw.op(10, ops.QUEUE_POP_STAMPED, ["payments", 0], rid=60)]
    await raw.send(*same_id)
    answers = [await raw.answer(60), await raw.answer(60)]
    forged = next(a for a in answers if a[2][1][0] == [FORGED])
    refused = await raw.give_back(11, forged)
    assert refused[1] == P.ERROR and refused[2][0] == "permission"
    await _payments_untouched(member)


async def test_a_pop_sent_on_two_links_of_one_session_gives_nothing_back(member: Node) -> None:
    one = await _Raw.open(member)
    two = await _Raw.open(member, one.session)
    scratch, payments = one.op(3, ops.QUEUE_POP_STAMPED, ["scratch", 1]), \
        two.op(3, ops.QUEUE_POP_STAMPED, ["payments", 1])
    await one.send(scratch)
    await two.send(payments)
    answers = [await one.answer(scratch[0]), await two.answer(payments[0])]
    if answers[1][2][1][0] == [FORGED]:  # the scratch pop applied first
        refused = await two.give_back(4, answers[1])
        assert refused[1] == P.ERROR and refused[2][0] == "permission"
    await member.barrier()
    assert member.queue("payments", capacity=2).len() <= 2


async def test_what_a_pop_of_its_own_number_handed_out_goes_back(member: Node) -> None:
    raw = await _Raw.open(member)
    popped = await raw.call(1, ops.QUEUE_POP_STAMPED, ["payments", 2])
    assert popped[2][1][0] == [{"pay": 0}, {"pay": 1}]
    assert (await raw.give_back(2, popped))[1] == P.OK
    await _payments_untouched(member)


async def test_a_give_back_whose_runs_cover_more_ids_than_values_is_refused_unproposed(
        member: Node) -> None:
    """The runs of a give-back with headers are expanded where it applies: runs of
    billions of ids would hold every member there."""
    raw = await _Raw.open(member)
    answer = await raw.call(1, ops.QUEUE_UNPOP_HEADERS,
                            ["payments", [1], [[0, 10**6, 0]], [[0, {"h": "v"}]]])
    assert answer[1] == P.ERROR and answer[2][0] == "refused", answer
    assert "cover 1000000 ids" in answer[2][1]
    await _payments_untouched(member)


async def test_a_popped_tuple_given_back_as_a_list_is_refused(member: Node) -> None:
    """A list and a tuple encode alike but for the tuple's tag: the element given back
    must be the one popped, of the same types."""
    payments = member.queue("payments", capacity=2)
    await payments.pop()
    await payments.pop()
    await payments.push({"pay": (0, 1)})
    raw = await _Raw.open(member)
    popped = await raw.call(3, ops.QUEUE_POP_STAMPED, ["payments", 1])
    values, runs = popped[2][1]
    assert values[0]["pay"].tag == TUPLE_TAG
    refused = await raw.call(4, ops.QUEUE_UNPOP_STAMPED, ["payments", [{"pay": [0, 1]}], runs])
    assert refused[1] == P.ERROR and refused[2][0] == "permission", refused
    assert (await raw.give_back(5, popped))[1] == P.OK  # as popped: taken
    await member.barrier()
    assert await payments.pop() == {"pay": (0, 1)}


async def test_headers_named_twice_in_a_give_back_are_refused(member: Node) -> None:
    """The state machine keeps the headers an id's last entry with some names: a table
    naming an element's id with forged headers, then with none, is not the element as
    popped."""
    raw = await _Raw.open(member)
    popped = await raw.call(3, ops.QUEUE_POP_STAMPED, ["payments", 1])
    values, runs = popped[2][1]
    first = runs[0][0]
    table = [[first, {"pay-to": "mallory"}], [first, None]]
    refused = await raw.call(4, ops.QUEUE_UNPOP_HEADERS, ["payments", values, runs, table])
    assert refused[1] == P.ERROR and refused[2][0] == "permission", refused
    await member.barrier()
    assert member.view.queue("payments").headers_state() == []  # type: ignore[union-attr]


async def test_a_give_back_under_another_stamp_is_refused(member: Node) -> None:
    """An element goes back with the enqueue stamp it was popped with: a consume-only
    client may not make it look older or newer than it is."""
    raw = await _Raw.open(member)
    popped = await raw.call(3, ops.QUEUE_POP_STAMPED, ["payments", 2])
    values, runs = popped[2][1]
    assert [run[1] for run in runs] == [2]
    first, _, stamp = runs[0]
    for forged in ([[first, 2, stamp + 3_600_000]], [[first, 1, stamp], [first + 1, 1, 0]]):
        refused = await raw.call(4, ops.QUEUE_UNPOP_STAMPED, ["payments", values, forged])
        assert refused[1] == P.ERROR and refused[2][0] == "permission", refused
    assert (await raw.give_back(5, popped))[1] == P.OK
    await member.barrier()
    assert member.view.queue("payments").id_state()[1] == runs  # type: ignore[union-attr]
    await _payments_untouched(member)

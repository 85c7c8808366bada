"""A member refuses a client's op whose arguments have the wrong shape before proposing
it: nothing reaches the log, no member logs a failure while applying, and the client is
told which argument is wrong."""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import cbor2
import pytest
from lazily_transports import LinkConfig, dial

from lazily_queue import ClientAccess, ClientGrant, Node, connect
from lazily_queue.client import protocol as P
from lazily_queue.client.access import ADMIN, CONSUME, DECLARE, PRODUCE
from lazily_queue.client.op_shapes import _AFTER_NAME, shape_problem
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import new_session_id

pytestmark = pytest.mark.timeout(60)

TOKEN = b"token-of-every-permission"


def test_every_op_a_client_may_propose_has_a_shape() -> None:
    proposable = (PRODUCE | CONSUME | ADMIN | DECLARE) - {ops.TXN}
    assert sorted(proposable - _AFTER_NAME.keys()) == []


@pytest.mark.parametrize(("code", "args", "problem"), [
    (ops.QUEUE_DECLARE, ["q"], "takes 2 arguments [name, value], not 1"),
    (ops.QUEUE_PUSH, ["q", 1, 2], "takes 2 arguments"),
    (ops.QUEUE_POP, [7], "the name, must be a string"),
    (ops.WORK_ACK, ["w", "worker", True], "argument 3 must be an int, not bool True"),
    (ops.WORK_ACK, ["w", 5, 1], "argument 2 must be a string, not int 5"),
    (ops.WORK_CLAIM, ["w", "worker", math.nan], "argument 3 must be a time in ms"),
    (ops.WORK_CLAIM, ["w", "worker", -1], "argument 3 must be a time in ms"),
    (ops.WORK_RELEASE, ["w", "worker", [1, {}]], "must be a list of ints, not list"),
    (ops.WORK_REDRIVE, ["w", 3], "must be a list of ints or None"),
    (ops.TOPIC_SUBSCRIBE, ["t", "s", "forever"], "must be a durability (durable or ephemeral)"),
    (ops.TOPIC_ADVANCE_TO, ["t", "s", -1], "must be a non-negative int"),
])
def test_a_wrong_shape_names_the_argument(code: int, args: list[Any], problem: str) -> None:
    found = shape_problem(code, args)
    assert found is not None and problem in found


@pytest.mark.parametrize(("code", "args"), [
    (ops.QUEUE_DECLARE, ["q", None]),
    (ops.WORK_CLAIM, ["w", "worker", None]),
    (ops.WORK_CLAIM, ["w", "worker", 12.5]),
    (ops.WORK_REDRIVE, ["w", None]),
    (ops.WORK_SETTLE_MANY, ["w", "worker", "acked", [1, 2]]),
    (ops.TOPIC_SUBSCRIBE, ["t", "s", "ephemeral"]),
    (ops.BARRIER, []),  # cluster ops and transactions are checked elsewhere
    (ops.TXN, [[ops.QUEUE_PUSH, "q", 1]]),
])
def test_the_right_shape_passes(code: int, args: list[Any]) -> None:
    assert shape_problem(code, args) is None


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lq-shape-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def member(short_tmp: Path) -> AsyncIterator[Node]:
    access = ClientAccess([ClientGrant("all", TOKEN, produce=["*"], consume=["*"],
                                       admin=["*"])])
    node = Node(1, data_dir=None, durability="none", listen=f"unix://{short_tmp}/n1.sock",
                secret=b"the-cluster-secret", clients=access)
    async with node:
        await node.wait_for_leader()
        yield node


async def test_a_member_refuses_malformed_ops_before_they_reach_the_log(
    member: Node, caplog: pytest.LogCaptureFixture,
) -> None:
    assert member.listen is not None
    async with connect(member.listen, ("all", TOKEN)) as client:
        await client.work_queue("w").push("job")
        await client.topic("t").publish("news")
    stream = await dial(member.listen, LinkConfig(peer_id=0, session_id="x", secret=TOKEN,
                                                  credential="all"))
    malformed = [
        (ops.QUEUE_DECLARE, ["q", None, "extra"]),
        (ops.WORK_ACK, ["w", "worker", {"a": 1}]),
        (ops.WORK_RELEASE, ["w", "worker", [{"a": 1}]]),
        (ops.WORK_CLAIM, ["w", "worker", math.inf]),
        (ops.TOPIC_SUBSCRIBE, ["t", "reader", "w"]),
        (ops.TOPIC_ADVANCE, ["t"]),
    ]
    applied_before = member.view.applied_ops
    try:
        await stream.send(cbor2.dumps([1, P.HELLO, P.VERSION, new_session_id("all")]))
        assert cbor2.loads(await stream.receive())[1] == P.OK
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

"""Fair service of a member's clients: a light client is neither admitted nor proposed
behind a greedy one; each client's ops keep their order; what a closed or cancelled
client held is given back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue import ClientAccess, ClientGrant, testing
from lazily_queue.client.batching import PendingOp
from lazily_queue.client.fair import TURN_OPS, OpScheduler, QueuedTimeout
from lazily_queue.client.fair_budget import FairBudget
from lazily_queue.client.proposal_window import ProposalWindow
from lazily_queue.raft.errors import CommitTimeout
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.replicated import ops
from tests.client.test_client_cluster import TOKEN, client_of

pytestmark = pytest.mark.timeout(60)


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0.001 if _ > 100 else 0)
    raise AssertionError(f"never: {what}")


# -- admission -------------------------------------------------------------------------------


async def test_a_freed_slot_goes_to_the_waiter_holding_fewest_not_the_first() -> None:
    budget = FairBudget(1)
    await budget.take(0)
    greedy = asyncio.ensure_future(budget.take(5))
    await _until(lambda: budget.waiting == 1, "the greedy client waits")
    light = asyncio.ensure_future(budget.take(0))
    await _until(lambda: budget.waiting == 2, "the light client waits")
    budget.give()
    await _until(lambda: light.done(), "the light client is admitted")
    assert not greedy.done()
    budget.give()
    await greedy
    assert budget.free == 0 and budget.waiting == 0


async def test_waiters_holding_as_many_are_served_in_arrival_order() -> None:
    budget = FairBudget(1)
    await budget.take(0)
    order: list[int] = []

    async def take(k: int) -> None:
        await budget.take(3)
        order.append(k)

    tasks = []
    for k in range(4):
        tasks.append(asyncio.ensure_future(take(k)))
        await _until(lambda k=k: budget.waiting == k + 1, "queued")  # type: ignore[misc]
    for _ in range(4):
        budget.give()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3]


async def test_a_cancelled_waiter_frees_its_turn() -> None:
    budget = FairBudget(1)
    await budget.take(0)
    first = asyncio.ensure_future(budget.take(0))
    await _until(lambda: budget.waiting == 1, "queued")
    second = asyncio.ensure_future(budget.take(1))
    await _until(lambda: budget.waiting == 2, "queued")
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    budget.give()
    await second  # the cancelled waiter's turn went to the next one
    assert budget.free == 0
    budget.give()
    assert budget.free == 1 and budget.ready


async def test_a_waiter_cancelled_once_granted_passes_its_slot_on() -> None:
    budget = FairBudget(1)
    await budget.take(0)
    first = asyncio.ensure_future(budget.take(0))
    await _until(lambda: budget.waiting == 1, "queued")
    second = asyncio.ensure_future(budget.take(0))
    await _until(lambda: budget.waiting == 2, "queued")
    budget.give()  # granted to the first ...
    first.cancel()  # ... which is cancelled before it runs
    await asyncio.gather(first, return_exceptions=True)
    await second
    assert budget.free == 0


async def test_the_reserve_admits_light_clients_only() -> None:
    budget = FairBudget(3, reserve=2, light=2)
    for held in (0, 1, 2):  # light, light, then heavy while more than the reserve is free
        await budget.take(held)
    assert budget.free == 2 and not budget.ready
    heavy = asyncio.ensure_future(budget.take(3))
    await _until(lambda: budget.waiting == 1, "the heavy client waits")
    await budget.take(0)  # a light client takes the reserve at once
    assert budget.free == 1 and not heavy.done()
    budget.give()
    assert not heavy.done()
    budget.give()  # more than the reserve free again: the heavy client's turn
    await heavy
    assert budget.free == 2


# -- proposal order ---------------------------------------------------------------------------


class _Replica:
    config = ReplicaConfig()

    def __init__(self) -> None:
        self.proposed: list[tuple[int, list[Any], Callable[[Any, Any], None]]] = []

    def propose(self, code: int, args: list[Any], *, timeout: float,
                on_done: Callable[[Any, Any], None]) -> None:
        assert timeout > 0
        self.proposed.append((code, args, on_done))


class _Driver:
    running = True
    disk_error = None
    call_observer = None

    def __init__(self) -> None:
        self.replica = _Replica()

    def wake(self) -> None:
        pass

    def observe_call(self, code: int, seconds: float, result: Any,
                     error: BaseException | None) -> None:
        if self.call_observer is not None:
            self.call_observer(code, seconds, result, error)


class _Node:
    def __init__(self) -> None:
        self.driver = _Driver()


class _Scheduler:
    """An OpScheduler over a replica that records proposals (answered by the test)."""

    def __init__(self, window: int, reserve: int = 0,
                 control: ProposalWindow | None = None) -> None:
        self.node = _Node()
        self.answers: list[tuple[Any, int, Any]] = []
        self.released: list[Any] = []
        self.sched = OpScheduler(
            self.node, window, reserve=reserve,  # type: ignore[arg-type]
            answer=lambda conn, op, result, error: self.answers.append((conn, op.rid, error)),
            fail=lambda conn, rid, error: self.answers.append((conn, rid, error)),
            release=lambda conn: self.released.append(conn), control=control)

    @property
    def proposed(self) -> list[tuple[int, list[Any], Callable[[Any, Any], None]]]:
        return self.node.driver.replica.proposed

    def seqs(self, k: int) -> list[int]:
        """The sequence numbers of the ``k``-th proposal's ops."""
        code, args, _ = self.proposed[k]
        return [args[1]] if code == ops.CLIENT_OP else [op[0] for op in args[2:]]

    def add(self, conn: str, first: int, count: int, session: int = 7,
            timeout: float = 10.0) -> None:
        self.sched.add(conn, session, [  # type: ignore[arg-type]
            PendingOp(seq, seq, first, ops.QUEUE_PUSH, ["q", seq], timeout)
            for seq in range(first, first + count)])

    def complete(self, k: int) -> None:
        code, args, on_done = self.proposed[k]
        count = 1 if code == ops.CLIENT_OP else len(args) - 2
        on_done(None if count == 1 else [None] * count, None)


async def test_a_light_clients_op_is_proposed_before_a_greedy_clients_queued_ones() -> None:
    s = _Scheduler(window=8)
    s.add("greedy", 1, 20)
    assert s.seqs(0) == list(range(1, 9)) and len(s.proposed) == 1  # the window is full
    s.add("light", 100, 1)
    assert len(s.proposed) == 1  # waits for room
    s.add("greedy", 21, 5)
    s.complete(0)
    await _until(lambda: len(s.proposed) == 3, "room is given out")
    assert s.seqs(1) == [100]  # the light client first, then the greedy one's next
    assert s.seqs(2) == list(range(9, 16))
    assert s.sched.in_window == 8 and s.sched.waiting == 10


async def test_the_reserve_lets_a_light_client_in_while_a_greedy_one_fills_the_window() -> None:
    s = _Scheduler(window=12, reserve=4)
    s.add("greedy", 1, 20)
    assert s.seqs(0) == list(range(1, 13))  # the greedy client stops at the window
    assert len(s.proposed) == 1
    s.add("light", 100, 1)
    assert s.seqs(1) == [100]  # at once


async def test_a_light_client_behind_a_waiting_greedy_one_uses_the_reserve() -> None:
    s = _Scheduler(window=4, reserve=2)
    s.add("first", 1, 4)  # the window is full
    s.add("greedy", 10, 10)  # waits, ahead of ...
    s.add("light", 100, 1)  # ... the light client, which goes at once all the same
    assert [s.seqs(k) for k in range(len(s.proposed))] == [[1, 2, 3, 4], [100]]


@pytest.mark.parametrize("target", [1e-9, 0.0])
async def test_ops_waiting_behind_slow_commits_shrink_the_window(target: float) -> None:
    s = _Scheduler(window=64, control=ProposalWindow(64, 8, target=target, interval=0))
    s.add("greedy", 1, 200)
    assert len(s.seqs(0)) == 64  # the window is full: the rest waits
    await asyncio.sleep(0.001)
    s.complete(0)  # slower than the target, with ops waiting
    await _until(lambda: len(s.proposed) == 2, "room is given out")
    assert len(s.seqs(1)) == (51 if target else 64)
    assert s.sched.window == (51 if target else 64)


async def test_the_scheduler_yields_to_the_loop_between_large_turns() -> None:
    s = _Scheduler(window=10_000)
    s.add("a", 1, TURN_OPS + 40)
    assert sum(len(s.seqs(k)) for k in range(len(s.proposed))) == TURN_OPS
    await _until(lambda: len(s.proposed) == 2, "the rest is proposed on the next turn")
    assert s.seqs(1) == list(range(TURN_OPS + 1, TURN_OPS + 41))


async def test_the_scheduler_yields_to_the_loop_between_turns_of_many_containers() -> None:
    s = _Scheduler(window=10_000)

    def proposed() -> list[int]:
        return [seq for k in range(len(s.proposed)) for seq in s.seqs(k)]

    s.sched.add("a", 7, [PendingOp(seq, seq, 1, ops.QUEUE_PUSH, ["q", []], 10.0, 30_000)
                         for seq in range(1, 6)])  # type: ignore[arg-type]
    assert proposed() == [1, 2]  # 60,000 containers in this step, 90,000 would not fit
    await _until(lambda: len(proposed()) == 5, "the rest is proposed in later steps")
    assert proposed() == [1, 2, 3, 4, 5]
    await asyncio.sleep(0)
    s.sched.add("b", 7, [PendingOp(9, 9, 9, ops.QUEUE_PUSH, ["q", []], 10.0, 100_000)])  # type: ignore[arg-type]
    assert proposed()[-1] == 9  # the first op of a step goes whatever it holds


async def test_each_clients_ops_are_proposed_in_order_under_the_session_read() -> None:
    s = _Scheduler(window=3)
    s.add("a", 1, 2, session=5)
    s.add("a", 3, 2, session=6)  # a new session (a HELLO between two frames)
    s.add("a", 5, 1, session=6)
    proposed: list[tuple[int, list[int]]] = []
    for _ in range(5):
        if not s.proposed:
            break
        for k in range(len(s.proposed)):
            args = s.proposed[k][1]
            proposed.append((args[0], s.seqs(k)))
        done = list(range(len(s.proposed)))
        taken = list(s.proposed)
        s.proposed.clear()
        for k in done:
            taken[k][2](None if taken[k][0] == ops.CLIENT_OP else [None] * (len(taken[k][1]) - 2),
                        None)
        await asyncio.sleep(0)
    assert proposed == [(5, [1, 2]), (6, [3]), (6, [4, 5])]
    assert [rid for _c, rid, _e in s.answers] == [1, 2, 3, 4, 5]


async def test_a_closed_clients_waiting_ops_are_given_back_not_proposed() -> None:
    s = _Scheduler(window=4)
    s.add("gone", 1, 10)
    dropped: list[str] = []
    assert s.sched.after("gone", lambda: dropped.append("proposed"),  # type: ignore[arg-type]
                         lambda: dropped.append("dropped"))
    s.sched.drop("gone")  # type: ignore[arg-type]
    assert s.released == ["gone"] * 6 and dropped == ["dropped"]
    s.complete(0)  # what was proposed is still answered, and frees its room
    assert s.sched.in_window == 0 and s.sched.waiting == 0
    s.add("next", 1, 2)
    assert len(s.proposed) == 2


async def test_a_request_queued_after_ops_is_made_once_they_are_proposed() -> None:
    s = _Scheduler(window=2)
    made: list[int] = []
    assert not s.sched.after("a", lambda: made.append(1), lambda: None)  # type: ignore[arg-type]
    s.add("a", 1, 3)
    assert s.sched.after("a", lambda: made.append(len(s.proposed)),  # type: ignore[arg-type]
                         lambda: None)
    assert made == []
    s.complete(0)
    await _until(lambda: bool(made), "the request is made")
    assert made == [2] and s.seqs(1) == [3]


async def test_an_op_whose_timeout_passed_while_it_waited_is_answered_not_applied() -> None:
    """... and reported to the call observer (the metrics) as a timeout in the queue."""
    s = _Scheduler(window=1)
    seen: list[tuple[int, Any, BaseException | None]] = []
    s.node.driver.call_observer = (  # type: ignore[assignment]
        lambda code, _seconds, result, error: seen.append((code, result, error)))
    loop = asyncio.get_running_loop()
    now = [loop.time()]
    loop.time = lambda: now[0]  # type: ignore[method-assign]
    try:
        s.add("a", 1, 1)
        s.add("b", 2, 1, timeout=5.0)
        now[0] += 6.0
        s.complete(0)
        await _until(lambda: bool(s.answers) and s.answers[-1][0] == "b", "b answered")
    finally:
        del loop.time
    assert len(s.proposed) == 1 and s.released == ["b"]
    assert isinstance(s.answers[-1][2], CommitTimeout)
    assert "not applied" in str(s.answers[-1][2])
    assert seen[1:] == [(ops.QUEUE_PUSH, None, s.answers[-1][2])]  # after a's answer
    assert isinstance(seen[1][2], QueuedTimeout)


# -- through a member -------------------------------------------------------------------------


async def test_a_member_proposes_a_light_clients_push_before_a_greedy_clients_queued_ones() -> None:
    """A greedy client holds the member's whole budget (its proposals held back), more of
    its pushes wait; a light client's push is admitted and proposed at once, and lands
    before every greedy push not yet proposed."""
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
                          listen="memory://fair-1", max_in_flight=16, max_total_in_flight=16)
    heavy_limit = access.max_total_in_flight
    async with testing.cluster(1, node_options=lambda _id: {"clients": access}) as c, \
            client_of(["memory://fair-1"], max_in_flight=64) as greedy, \
            client_of(["memory://fair-1"]) as light:
        node = c.node(1)
        server = node.clients
        assert server is not None
        await greedy.queue("q").push("first")
        await light.queue("q").push("second")
        replica = node.driver.replica
        real = replica.propose
        held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        monkey = pytest.MonkeyPatch()
        monkey.setattr(replica, "propose", lambda *a, **k: held.append((a, k)))

        def pushed() -> list[Any]:
            found: list[Any] = []
            for (code, args), _k in held:
                found += [op[-1] for op in args[2:]] if code == ops.CLIENT_OPS else [args[-1]]
            return found

        try:
            pushes = [asyncio.ensure_future(greedy.queue("q").push(i)) for i in range(40)]
            await _until(lambda: server.stats()["in_flight"] >= heavy_limit,
                         "the greedy client holds the budget")
            before = len(pushed())
            push = asyncio.ensure_future(light.queue("q").push("light"))
            await _until(lambda: "light" in pushed(), "the light push is proposed")
            assert pushed().index("light") == before
        finally:
            monkey.undo()
            for args, kwargs in held:
                real(*args, **kwargs)
            node.driver.wake()
        await asyncio.gather(push, *pushes)
        items = await light.queue("q").pop_many(100)
        assert items[:2] == ["first", "second"]
        assert [x for x in items[2:] if x != "light"] == list(range(40))  # in order
        assert items.index("light") - 2 == before


async def test_a_client_leaving_with_ops_waiting_their_turn_gives_its_slots_back() -> None:
    access = ClientAccess([ClientGrant("web", TOKEN, produce=["*"], consume=["*"])],
                          listen="memory://fair-2", max_in_flight=256, max_total_in_flight=256)
    async with testing.cluster(1, node_options=lambda _id: {"clients": access}) as c:
        node = c.node(1)
        server = node.clients
        assert server is not None
        replica = node.driver.replica
        real = replica.propose
        held: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        monkey = pytest.MonkeyPatch()
        try:
            async with client_of(["memory://fair-2"], max_in_flight=256) as greedy:
                await greedy.queue("q").push("first")
                monkey.setattr(replica, "propose", lambda *a, **k: held.append((a, k)))
                pushes = [asyncio.ensure_future(greedy.queue("q").push(i)) for i in range(200)]
                await _until(lambda: server.stats()["waiting"] > 0, "ops wait their turn")
            await asyncio.gather(*pushes, return_exceptions=True)
            await _until(lambda: server.stats()["waiting"] == 0, "the lane is dropped")
        finally:
            monkey.undo()
            for args, kwargs in held:
                real(*args, **kwargs)
            node.driver.wake()
        await _until(lambda: server.stats()["in_flight"] == 0, "every slot given back")

"""The collector's thaw runs where a pause costs no election; a leader hands over first."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lazily_queue import service as service_module
from lazily_queue import testing, thaw_guard
from lazily_queue.config import parse_config
from lazily_queue.node import Node
from lazily_queue.service import NodeService
from lazily_queue.thaw_guard import ThawGuard


async def _agreed_leader(nodes: Callable[[], list[Node]]) -> Node:
    """The leader once every node knows it (a follower that has not heard from it yet
    knows no leader, and so may not thaw)."""
    async with asyncio.timeout(20):
        while True:
            running = nodes()
            leaders = [n for n in running if n.is_leader]
            if len(leaders) == 1 and all(n.leader_id == leaders[0].node_id for n in running):
                return leaders[0]
            await asyncio.sleep(0.01)


async def test_followers_take_turns_to_thaw_and_the_leader_never_does() -> None:
    now = [0.0]
    async with testing.cluster(3) as c:
        leader = await _agreed_leader(lambda: c.running)
        guards = {node.node_id: ThawGuard(node, clock=lambda: now[0], settle=0)
                  for node in c.running}
        followers = sorted(i for i in guards if i != leader.node_id)
        for slot in range(4):  # one follower per turn, in the order of their ids
            turn = followers[slot % 2]
            now[0] = slot * thaw_guard.TURN + 0.1
            assert {i: g.may_thaw() for i, g in guards.items()} == {
                i: i == turn for i in guards}
            now[0] = (slot + thaw_guard.WINDOW) * thaw_guard.TURN + 0.1  # its turn's end
            assert not any(g.may_thaw() for g in guards.values())


async def test_an_overdue_leader_hands_over_and_then_may_thaw_in_its_turn() -> None:
    now = [0.0]
    async with testing.cluster(3) as c:
        leader = await _agreed_leader(lambda: c.running)
        guards = {node.node_id: ThawGuard(node, clock=lambda: now[0], settle=0)
                  for node in c.running}
        guard = guards[leader.node_id]
        assert not await guard.hand_over()  # nobody asked
        assert leader.is_leader and guard.asked == 0
        guard.due(True)
        assert await guard.hand_over()
        assert not leader.is_leader
        assert guard.asked == guard.handed_over == 1
        new = await _agreed_leader(lambda: c.running)
        followers = sorted(i for i in guards if i != new.node_id)
        now[0] = followers.index(leader.node_id) * thaw_guard.TURN
        assert guard.may_thaw()
        follower = guards[next(i for i in guards if i not in (leader.node_id, new.node_id))]
        follower.due(True)  # a follower has nothing to hand over
        assert not await follower.hand_over()
        assert follower.asked == 0 and new.is_leader
        await new.queue("q").push(1)  # the cluster goes on


async def test_a_leader_hands_over_only_once_it_has_led_for_a_while() -> None:
    async with testing.cluster(3) as c:
        leader = await _agreed_leader(lambda: c.running)
        guard = ThawGuard(leader, settle=3600)
        guard.due(True)
        assert not await guard.hand_over()  # a hand-over just received is not handed back
        assert guard.asked == 0 and leader.is_leader


async def test_a_follower_starts_its_due_thaw_in_its_turn_only() -> None:
    now = [0.0]
    async with testing.cluster(3) as c:
        leader = await _agreed_leader(lambda: c.running)
        followers = sorted(n.node_id for n in c.running if n is not leader)
        guard = ThawGuard(c.nodes[followers[1]], clock=lambda: now[0])
        assert not guard.thaw_if_due()  # nothing due
        guard.due(False)
        assert not guard.thaw_if_due()  # not its turn
        now[0] = thaw_guard.TURN
        assert guard.thaw_if_due() and guard.thaws_started == 1
        assert not guard.thaw_if_due()  # done
        guard.due(False)
        assert guard.may_thaw()  # what the collector asks when it thaws by itself ...
        assert not guard.thaw_if_due()  # ... so that none is due any more
        leading = ThawGuard(leader, clock=lambda: now[0])
        leading.due(False)
        assert not leading.thaw_if_due() and leading.thaws_started == 0


async def test_the_only_voter_may_thaw_and_has_nobody_to_hand_over_to() -> None:
    async with testing.cluster(1) as c:
        guard = ThawGuard(await _agreed_leader(lambda: c.running))
        assert guard.may_thaw()
        guard.due(True)
        assert not await guard.hand_over()
        assert guard.asked == 0 and guard.node.is_leader


async def test_a_stopped_node_may_thaw() -> None:
    async with testing.cluster(1) as c:
        node = await c.leader()
    assert ThawGuard(node).may_thaw()


async def test_a_failed_hand_over_is_logged_and_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with testing.cluster(3) as c:
        leader = await _agreed_leader(lambda: c.running)
        guard = ThawGuard(leader, settle=0)

        async def refused(*_: Any, **__: Any) -> str:
            raise TimeoutError("leadership did not move before the deadline")

        leader.transfer_leadership = refused  # type: ignore[method-assign]
        guard.due(True)
        assert not await guard.hand_over()
        assert "could not hand leadership over" in caplog.text
        assert guard.asked == 1 and guard.handed_over == 0 and leader.is_leader


async def test_a_node_service_wires_the_thaw_to_its_role(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks: dict[str, dict[str, Callable[..., Any]]] = {}

    def survivors(**options: Callable[..., Any]) -> Callable[[], None]:
        guard = options["may_thaw"].__self__  # type: ignore[attr-defined]
        hooks[guard.node.node_id] = options
        return lambda: None

    monkeypatch.setattr(service_module, "freeze_started_process", lambda: 0)
    monkeypatch.setattr(service_module, "freeze_survivors", survivors)
    monkeypatch.setattr(thaw_guard, "CHECK_INTERVAL", 0.02)
    monkeypatch.setattr(thaw_guard, "SETTLE", 0.0)
    monkeypatch.setenv("LAZILY_THAW_SECRET", "thaw-secret")
    peers = {str(i): f"unix:{tmp_path}/n{i}.sock" for i in (1, 2, 3)}
    services = [NodeService(parse_config({"id": i, "data_dir": f"d{i}", "durability": "none",
                                          "secret_env": "LAZILY_THAW_SECRET", "peers": peers},
                                         base=tmp_path),
                            out=io.StringIO(), handle_signals=False, freeze_when_started=True)
                for i in (1, 2, 3)]
    tasks = [asyncio.create_task(s.run()) for s in services]
    try:
        async with asyncio.timeout(30):
            while len(hooks) < 3:  # noqa: ASYNC110 - polls plain state
                await asyncio.sleep(0.02)
            leader = await _agreed_leader(
                lambda: [s.node for s in services if s.node is not None])
            assert not hooks[leader.node_id]["may_thaw"]()
            hooks[leader.node_id]["due"](True)  # what the collector calls, far past the bound
            guard = hooks[leader.node_id]["may_thaw"].__self__  # type: ignore[attr-defined]
            assert isinstance(guard, ThawGuard) and guard.node is leader
            while guard.handed_over == 0:  # noqa: ASYNC110 - the service's task hands over
                await asyncio.sleep(0.02)
            assert not leader.is_leader
    finally:
        for s in services:
            s.request_stop()
        assert await asyncio.gather(*tasks) == [0, 0, 0]

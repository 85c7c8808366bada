"""Adding a member is all or nothing: a refused change leaves no replicated address."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue import testing
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.raft.outcome import Outcome
from lazily_queue.replicated import ops


def _refuse(outcome: Outcome, *first: Outcome) -> Any:
    """An engine ``add_member`` answering ``first`` in turn, then ``outcome``."""
    answers = list(first)

    def add_member(peer_id: str, callback: Any) -> None:
        callback(None, answers.pop(0) if answers else outcome)
    return add_member


@pytest.mark.parametrize("outcome", [Outcome.REQUEST_DENIED, Outcome.NOT_LEADER,
                                     Outcome.DISCARDED])
async def test_a_refused_change_withdraws_the_address(outcome: Outcome,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        monkeypatch.setattr(leader.driver.replica.engine, "add_member", _refuse(outcome))
        with pytest.raises(InvalidConfiguration,
                           match=f"adding node 7 was refused: {outcome.value}.*nothing was "
                                 "changed"):
            await leader.add_member(7, "tcp://127.0.0.1:9", timeout=0.3)
        for node in c.running:
            await node.barrier()
            assert node.view.address("7") is None


async def test_a_refused_change_restores_an_earlier_address(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        gone = (await c.followers())[0].node_id
        await c.remove_member(gone)
        await leader.driver.call(ops.MEMBER_ADDRESS, [gone, "tcp://old:1"], timeout=2)
        monkeypatch.setattr(leader.driver.replica.engine, "add_member",
                            _refuse(Outcome.REQUEST_DENIED))
        with pytest.raises(InvalidConfiguration, match="nothing was changed"):
            await leader.add_member(gone, "tcp://new:2", timeout=0.3)
        await leader.barrier()
        assert leader.view.address(gone) == "tcp://old:1"


async def test_a_withdrawal_that_fails_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    async with testing.cluster(3) as c:
        leader = await c.leader()
        monkeypatch.setattr(leader.driver.replica.engine, "add_member",
                            _refuse(Outcome.REQUEST_DENIED))
        call = leader.driver.call

        async def no_forgetting(code: int, args: list[Any], **kw: Any) -> Any:
            if code == ops.MEMBER_FORGET:
                raise TimeoutError("no quorum in time")
            return await call(code, args, **kw)

        monkeypatch.setattr(leader.driver, "call", no_forgetting)
        with pytest.raises(InvalidConfiguration, match=r"refused: request_denied.*withdrawing the "
                           r"address just replicated for node 7 failed too \(no quorum"):
            await leader.add_member(7, "tcp://127.0.0.1:9", timeout=0.3)


@pytest.mark.parametrize("first", [Outcome.LEADER_CHANGED, Outcome.UNKNOWN_OUTCOME,
                                   Outcome.UNRECOGNISED])
async def test_an_attempt_that_may_still_commit_keeps_the_address(
        first: Outcome, monkeypatch: pytest.MonkeyPatch) -> None:
    """The member needs its address if that attempt commits after all."""
    async with testing.cluster(3) as c:
        leader = await c.leader()
        monkeypatch.setattr(leader.driver.replica.engine, "add_member",
                            _refuse(Outcome.REQUEST_DENIED, first))
        with pytest.raises(InvalidConfiguration, match=f"answers \\({first.value}[,)].*may still "
                           "commit, so node 7's address stays replicated"):
            await leader.add_member(7, "tcp://127.0.0.1:9", timeout=0.3)
        await leader.barrier()
        assert leader.view.address("7") == "tcp://127.0.0.1:9"

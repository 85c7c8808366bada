"""Removing a member forgets its replicated address once the removal has committed; a
removal that may still commit keeps it, and a forget that fails is cleaned up later."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lazily_queue import admin, testing
from lazily_queue.admin import AdminError
from lazily_queue.errors import InvalidConfiguration
from lazily_queue.raft.outcome import Outcome
from lazily_queue.replicated import ops

GONE = "tcp://127.0.0.1:9"


async def _addressed_member(c: testing.Cluster) -> Any:
    """The leader, after it added member 4 (never started) at ``GONE``."""
    leader = await c.leader()
    await leader.add_member(4, GONE)
    await leader.barrier()
    assert leader.view.address("4") == GONE
    return leader


def _answer(outcome: Outcome | None, *first: Outcome) -> Any:
    """An engine ``remove_member`` answering ``first`` in turn, then ``outcome`` (``None``:
    never answering)."""
    answers = list(first)

    def remove_member(peer_id: str, callback: Any) -> None:
        if answers:
            callback(None, answers.pop(0))
        elif outcome is not None:
            callback(None, outcome)
    return remove_member


async def test_a_removed_member_leaves_no_address_behind() -> None:
    async with testing.cluster(3) as c:
        leader = await _addressed_member(c)
        await leader.remove_member(4)
        for node in c.running:
            await node.barrier()
            assert "4" not in node.driver.replica.engine.members
            assert node.view.address("4") is None
        await leader.add_member(4)  # the id again, with no address: none is made up
        await leader.barrier()
        assert leader.view.address("4") is None


@pytest.mark.parametrize("first", [None, Outcome.UNKNOWN_OUTCOME, Outcome.LEADER_CHANGED])
async def test_a_removal_that_may_still_commit_keeps_the_address(
        first: Outcome | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The address is only forgotten once the member is known to be gone."""
    async with testing.cluster(3) as c:
        leader = await _addressed_member(c)
        engine = leader.driver.replica.engine
        if first is None:  # no answer before the deadline
            monkeypatch.setattr(engine, "remove_member", _answer(None))
            with pytest.raises(TimeoutError, match=r"may still commit.*node 4's address stays "
                               r"replicated.*remove it again"):
                await leader.remove_member(4, timeout=0.3)
        else:
            monkeypatch.setattr(engine, "remove_member",
                                _answer(Outcome.REQUEST_DENIED, first))
            with pytest.raises(InvalidConfiguration, match=f"answers \\({first.value}[,)].*may "
                               "still commit, so node 4's address stays replicated"):
                await leader.remove_member(4, timeout=0.3)
        await leader.barrier()
        assert leader.view.address("4") == GONE


async def test_a_refused_removal_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    async with testing.cluster(3) as c:
        leader = await _addressed_member(c)
        monkeypatch.setattr(leader.driver.replica.engine, "remove_member",
                            _answer(Outcome.REQUEST_DENIED))
        with pytest.raises(InvalidConfiguration, match=r"refused: request_denied.*nothing was "
                           "changed: node 4 is still a member"):
            await leader.remove_member(4, timeout=0.3)
        await leader.barrier()
        assert leader.view.address("4") == GONE
        assert "4" in leader.driver.replica.engine.members


async def test_a_forget_that_fails_is_logged_and_removing_again_cleans_up(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async with testing.cluster(3) as c:
        leader = await _addressed_member(c)
        call = leader.driver.call

        async def no_forgetting(code: int, args: list[Any], **kw: Any) -> Any:
            if code == ops.MEMBER_FORGET:
                raise TimeoutError("no quorum in time")
            return await call(code, args, **kw)

        monkeypatch.setattr(leader.driver, "call", no_forgetting)
        with caplog.at_level(logging.WARNING, logger="lazily_queue.membership"):
            await leader.remove_member(4)  # the removal committed: that is reported
        assert "4" not in leader.driver.replica.engine.members
        assert any("node 4 was removed, but forgetting its address failed (no quorum in time)"
                   in r.getMessage() and "remove it again" in r.getMessage()
                   and r.levelno == logging.WARNING for r in caplog.records)
        assert leader.view.address("4") == GONE
        monkeypatch.setattr(leader.driver, "call", call)
        await admin.remove_member(leader, "4")  # not a member, its address left: forgotten
        for node in c.running:
            await node.barrier()
            assert node.view.address("4") is None
        with pytest.raises(InvalidConfiguration, match="node 4 is not a member"):
            await leader.remove_member(4)  # nothing left to clean up
        with pytest.raises(AdminError, match="node 4 is not a member"):
            await admin.remove_member(leader, "4")

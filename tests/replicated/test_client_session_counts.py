"""The most client sessions any one client holds is kept as sessions open, drop, expire
and are restored from a snapshot, equal to what counting them all again gives."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops
from lazily_queue.replicated import state_machine as sm_module
from lazily_queue.replicated.client_sessions import (
    CLIENT_SESSION_BASE,
    OWNER_SHIFT,
    ClientSessions,
    new_session_id,
    owner_of,
)
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.table_sizes import table_sizes


def _per_owner(table: list[int]) -> Counter[int]:
    return Counter(owner_of(sid) for sid in table if sid > CLIENT_SESSION_BASE)


def _counted_again(table: list[int]) -> tuple[int, Counter[int]]:
    held = _per_owner(table)
    return max(held.values(), default=0), Counter(held.values())


def _scanned(table: list[int]) -> int:
    """The victim as a walk of the whole table finds it."""
    held = _per_owner(table)
    most = max(held.values())
    return next(sid for sid in table if sid > CLIENT_SESSION_BASE
                and held[owner_of(sid)] == most)


@pytest.mark.parametrize("seed", range(20))
def test_the_counts_and_the_victim_follow_opens_sightings_drops_and_rebuilds(
        seed: int) -> None:
    rng = random.Random(seed)
    counts = ClientSessions()
    table: list[int] = []  # oldest seen first
    serial = 0
    for _ in range(600):
        step = rng.random()
        if step < 0.4 or not table:
            serial += 1
            sid = CLIENT_SESSION_BASE + (rng.randrange(5) << OWNER_SHIFT) + serial
            table.append(sid)
            counts.opened(sid)
        elif step < 0.7:  # an op of it applied: to the table's end
            sid = table.pop(rng.randrange(len(table)))
            table.append(sid)
            counts.seen(sid)
        elif step < 0.98:
            counts.dropped(table.pop(rng.randrange(len(table))))
        else:
            counts.rebuild([*table, 7])  # a member's session id is not counted
        assert (counts.most, Counter({k: len(v) for k, v in counts.holding.items()})
                ) == _counted_again(table)
        assert counts.total == len(table)
        assert {owner: counts.held(owner) for owner in range(6)} == {
            owner: _per_owner(table)[owner] for owner in range(6)}
        assert {owner: list(sids) for owner, sids in counts.order.items()} == {
            owner: [sid for sid in table if sid > CLIENT_SESSION_BASE and owner_of(sid) == owner]
            for owner in _per_owner(table)}
        if table:
            assert counts.victim(table) == _scanned(table)


class _NotWalked:
    def __iter__(self) -> None:
        raise AssertionError("the table was walked")


def test_one_client_holding_the_most_gives_up_its_oldest_without_a_walk() -> None:
    counts = ClientSessions()
    idle = [CLIENT_SESSION_BASE + (1 << OWNER_SHIFT) + k for k in range(1, 8_001)]
    greedy = [CLIENT_SESSION_BASE + (2 << OWNER_SHIFT) + k for k in range(1, 8_003)]
    for sid in idle + greedy:
        counts.opened(sid)
    counts.seen(greedy[0])
    assert counts.victim(_NotWalked()) == greedy[1]  # type: ignore[arg-type]


def _push(sm: StateMachine, member: int, sid: int, stamp: int) -> None:
    op = [ops.CLIENT_OP, sid, 1, 1, ops.QUEUE_PUSH, "q", 1]
    assert sm.apply(encode_command(member, 0, [[1, *op]]), stamp) == [None]


def test_the_most_sessions_of_one_client_moves_in_the_state() -> None:
    """Shown with the table's bound: at the bound the client holding the most gives one
    up for each new session, so its figure stops growing there."""
    sm = StateMachine(max_client_sessions=6)
    sm.apply(encode_command(5, 0, [[1, ops.QUEUE_DECLARE, "q", None]]), 1_000)
    assert table_sizes(sm)["client_sessions"]["most_per_client"] == 0
    _push(sm, 6, new_session_id("web"), 1_000)
    for k in range(3):
        _push(sm, 10 + k, new_session_id("greedy"), 2_000 + k)
    sessions = table_sizes(sm)["client_sessions"]
    assert (sessions["count"], sessions["clients"], sessions["most_per_client"],
            sessions["limit"]) == (4, 2, 3, 6)
    for k in range(10):  # past the bound "greedy" gives up its own
        _push(sm, 20 + k, new_session_id("greedy"), 3_000 + k)
    assert table_sizes(sm)["client_sessions"]["most_per_client"] == 5
    copy = StateMachine(max_client_sessions=6)
    copy.restore(sm.capture())
    assert table_sizes(copy)["client_sessions"] == table_sizes(sm)["client_sessions"]
    later = 3_009 + sm_module.SESSION_TTL_MS  # all but the last one expire
    _push(sm, 40, new_session_id("web"), later)
    sessions = table_sizes(sm)["client_sessions"]
    assert (sessions["count"], sessions["most_per_client"]) == (2, 1)

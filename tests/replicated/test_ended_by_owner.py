"""Past the bound on ended client session ids, the client holding the most gives up its
oldest: a client ending sessions without end never pushes out another's ended id, so a
late retry of that other client's op is still refused, never applied in a fresh
session; every replica, restored from a snapshot or not, forgets the same ids."""

from __future__ import annotations

import random
from itertools import count
from typing import Any

import pytest

from lazily_queue.raft.batch import encode_command
from lazily_queue.replicated import ops, session_end
from lazily_queue.replicated.client_sessions import (
    CLIENT_SESSION_BASE,
    OWNER_SHIFT,
    owner_tag,
)
from lazily_queue.replicated.state_machine import SESSION_TTL_MS, StateMachine

_members = count(1)
_ids = count(1)


def _sid(client: str) -> int:
    """A fresh session id of ``client`` (the form clients of protocols 3 and 4 choose)."""
    return CLIENT_SESSION_BASE + (owner_tag(client) << OWNER_SHIFT) + next(_ids)


def _client(sm: StateMachine, sid: int, seq: int, code: int, *args: Any,
            stamp: int = 1_000) -> Any:
    result = sm.apply(encode_command(next(_members), 0,
                                     [[1, ops.CLIENT_OP, sid, seq, 0, code, *args]]), stamp)
    assert isinstance(result, list)
    return result[0]


def _ended(sm: StateMachine, client: str, stamp: int = 1_000) -> int:
    sid = _sid(client)
    _client(sm, sid, 1, ops.QUEUE_PUSH, "q", client, stamp=stamp)
    assert _client(sm, sid, 2, ops.SESSION_END, stamp=stamp) is None
    return sid


@pytest.fixture
def sm(monkeypatch: pytest.MonkeyPatch) -> StateMachine:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 8)
    machine = StateMachine()
    machine.apply(encode_command(next(_members), 0, [[1, ops.QUEUE_DECLARE, "q", None]]), 1)
    return machine


def test_a_client_ending_sessions_without_end_pushes_out_only_its_own(
        sm: StateMachine) -> None:
    web = _ended(sm, "web")
    flood = [_ended(sm, "flood", stamp=2_000 + n) for n in range(100)]
    assert web in sm.ended and len(sm.ended) == 8
    assert list(sm.ended.ended) == [web, *flood[-7:]]
    # A retry of web's push, late through another member: refused, not applied again.
    assert _client(sm, web, 1, ops.QUEUE_PUSH, "q", "web", stamp=3_000) == session_end.ENDED
    assert sm.queues["q"].elements().count("web") == 1


def test_the_client_holding_the_most_gives_up_its_oldest(sm: StateMachine) -> None:
    web = [_ended(sm, "web", stamp=n) for n in range(6)]
    cron = [_ended(sm, "cron", stamp=10 + n) for n in range(2)]
    late = [_ended(sm, "cron", stamp=20 + n) for n in range(3)]
    # web gave up its 2 oldest while it held the most, then cron its oldest.
    assert list(sm.ended.ended) == [*web[2:], cron[1], *late]
    api = _ended(sm, "api", stamp=30)  # web and cron hold 4 each: web's oldest is older
    assert list(sm.ended.ended) == [*web[3:], cron[1], *late, api]


def test_a_single_client_gives_up_its_oldest_as_before(sm: StateMachine) -> None:
    sids = [_ended(sm, "web", stamp=n) for n in range(20)]
    assert list(sm.ended.ended) == sids[-8:]


def test_a_restored_replica_forgets_the_same_ended_ids(sm: StateMachine) -> None:
    for n in range(5):
        _ended(sm, "web", stamp=n)
        _ended(sm, "cron", stamp=n)
    copy = StateMachine()
    copy.restore(sm.capture())
    for machine in (sm, copy):
        for client in ("cron", "web", "cron", "web", "api", "web"):
            sid = CLIENT_SESSION_BASE + (owner_tag(client) << OWNER_SHIFT) + 1_000 + len(
                machine.ended.ended)
            _client(machine, sid, 1, ops.SESSION_END, stamp=50)
    assert copy.capture()["ended_sessions"] == sm.capture()["ended_sessions"]
    assert copy.ended.by_owner == sm.ended.by_owner


def test_expiry_keeps_each_clients_ids_in_order(sm: StateMachine) -> None:
    old = [_ended(sm, client, stamp=n) for n, client in enumerate(["web", "cron", "web"])]
    new = _ended(sm, "cron", stamp=SESSION_TTL_MS + 10)
    assert list(sm.ended.ended) == [new] and old[0] not in sm.ended
    assert {k: list(v) for k, v in sm.ended.by_owner.items()} == {owner_tag("cron"): [new]}


def _most_holding_of_all(ended: session_end.EndedSessions) -> int:
    """The owner :meth:`EndedSessions._most_holding` must find, from every owner's ids."""
    held = ended.by_owner
    return min(held, key=lambda owner: (-len(held[owner]), ended.ended[next(iter(held[owner]))],
                                        next(iter(held[owner]))))


@pytest.mark.parametrize("seed", range(20))
def test_the_owner_giving_up_an_id_is_the_one_a_look_at_every_owner_finds(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 40)
    rng = random.Random(seed)
    ended = session_end.EndedSessions()
    sids: list[int] = []
    for stamp in range(1, 800):
        if rng.random() < 0.9 or not sids:
            sids.append(CLIENT_SESSION_BASE + (rng.randrange(6) << OWNER_SHIFT) + stamp)
            sid = sids[-1]
        else:
            sid = rng.choice(sids)  # ended again
        before = {o: list(held) for o, held in ended.by_owner.items()}
        full = len(ended) == 40 and sid not in ended
        ended.add(sid, stamp // 3)
        if full:  # at the bound: one id given up, the oldest of its client's
            gone = [(o, i) for o, held in before.items() for i in held if i not in ended]
            assert len(gone) == 1 and before[gone[0][0]][0] == gone[0][1], gone
        counts = {n: {o for o, held in ended.by_owner.items() if len(held) == n}
                  for n in {len(held) for held in ended.by_owner.values()}}
        assert ended.holding == counts and ended.most == max(counts, default=0)
        if ended.by_owner:
            assert ended._most_holding() == _most_holding_of_all(ended)
        if rng.random() < 0.02:
            ended.expire(stamp // 3 - 20)


def test_a_client_holding_the_most_gives_up_its_oldest_without_a_look_at_every_owner(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_end, "ENDED_KEPT", 3_000)
    ended = session_end.EndedSessions()
    for n in range(1, 2_001):  # 2,000 other clients holding one ended id each
        ended.add(CLIENT_SESSION_BASE + (n << OWNER_SHIFT) + 1, 1)
    greedy = [CLIENT_SESSION_BASE + (40_000 << OWNER_SHIFT) + n for n in range(1, 1_200)]
    for sid in greedy[:1_000]:
        ended.add(sid, 2)
    ended.by_owner = _Unlisted(ended.by_owner)  # type: ignore[assignment]
    for sid in greedy[1_000:]:
        ended.add(sid, 3)
    assert len(ended) == 3_000 and greedy[0] not in ended and greedy[199] in ended


class _Unlisted(dict[int, Any]):
    def __iter__(self) -> Any:
        raise AssertionError("every owner was looked at")

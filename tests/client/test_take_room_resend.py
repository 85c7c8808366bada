"""A take answered ``no_room`` goes again, under a new sequence number, only once it is
its session's oldest unanswered op, never sooner (no retry loop); through a member
announcing ``client-take-room-v1`` every op goes in the sized form (its floor negated),
a take only once the member answered the hello (sent before in the plain form, it would
not be held to its session's room)."""

from __future__ import annotations

from typing import Any

import pytest

from lazily_queue.client import protocol as P
from lazily_queue.replicated import ops
from lazily_queue.replicated.results import encode_result
from lazily_queue.replicated.take_bytes import NO_ROOM
from tests.client.test_client_session import RecordingLink, _session

pytestmark = pytest.mark.timeout(30)


class SizedLink(RecordingLink):
    """A link to a member taking the sized form."""

    features = frozenset({P.TAKE_ROOM_FEATURE})

    def no_room(self, seq: int) -> None:
        self.sent[seq][1]((P.OK, encode_result(NO_ROOM)))


def _take(session: Any) -> Any:
    return session.propose(ops.QUEUE_POP_STAMPED, ["q", 256], timeout=30)[1]


async def test_a_take_without_room_waits_for_the_earlier_ops_then_goes_once() -> None:
    link = SizedLink()
    session = _session(link)
    first, second, third = _take(session), _take(session), _take(session)
    assert [link.sent[s][0] for s in (1, 2, 3)] == [-1, -1, -1]  # the sized form
    link.no_room(3)
    assert set(link.sent) == {1, 2, 3}  # not sent again while 1 and 2 are unanswered
    later = _take(session)  # seq 5: the one waiting was numbered 4
    assert set(link.sent) == {1, 2, 3, 5}
    session.relinked(link)  # a new link sends every unanswered op again, but that one
    assert 4 not in link.sent
    link.answer(2, [["b"], []])
    assert 4 not in link.sent  # 1 still unanswered
    link.answer(1, [["a"], []])
    assert link.sent[4][0] == -4  # now the oldest: its floor frees every earlier result
    link.answer(4, [["c"], []])
    link.answer(5, [["d"], []])
    assert [await f for f in (first, second, third, later)] == [
        [["a"], []], [["b"], []], [["c"], []], [["d"], []]]
    session.close()


async def test_a_take_without_room_and_nothing_earlier_goes_again_at_once() -> None:
    link = SizedLink()
    session = _session(link)
    take = _take(session)
    link.no_room(1)  # the room is whole under the next number: it goes at once, once
    assert link.sent[2][0] == -2 and set(link.sent) == {1, 2}
    link.answer(2, [["a"], []])
    assert await take == [["a"], []]
    session.close()


async def test_a_take_waits_for_the_hello_to_go_in_the_sized_form() -> None:
    link = SizedLink()
    link.greeted = False  # a new link, say after a failover: its hello not yet answered
    session = _session(link)
    take = _take(session)
    push = session.propose(ops.QUEUE_PUSH, ["q", "v"], timeout=30)[1]
    assert set(link.sent) == {2}  # the push goes; the take waits for the member's features
    session.relinked(link)
    assert set(link.sent) == {2}
    link.greeted = True
    session.greeted(link)
    assert link.sent[1][0] == -1  # the sized form
    sends = link._rid
    session.greeted(link)  # listed once more, or greeted again: never sent twice
    assert link._rid == sends
    link.answer(1, [["a"], []])
    link.answer(2, None)
    assert [await take, await push] == [[["a"], []], None]
    session.close()


async def test_an_older_member_gets_the_old_form() -> None:
    link = RecordingLink()
    session = _session(link)
    take = _take(session)
    assert link.sent[1][0] == 1
    link.answer(1, [["a"], []])
    assert await take == [["a"], []]
    session.close()

"""A client session's floor (its oldest unanswered op) as answers arrive in any order,
each answer reaching the op it was sent for, a forgotten session, and an op's deadline
while it waits for a slot, over a link that records what it sends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.client import protocol as P
from lazily_queue.client.session import Session
from lazily_queue.replicated import ops
from lazily_queue.replicated.client_sessions import OWNER_SHIFT, owner_tag
from lazily_queue.replicated.session_register import REGISTERED_BASE

pytestmark = pytest.mark.timeout(30)


class RecordingLink:
    """Keeps each op's floor and answer callback instead of sending it."""

    features: frozenset[str] = frozenset()
    #: The member answered the hello: :attr:`features` is known.
    greeted = True

    def __init__(self) -> None:
        self.sent: dict[int, tuple[int, Callable[[Any], None]]] = {}
        self._rid = 0

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Any], None]) -> int:
        self._rid += 1
        self.sent[seq] = (floor, on_answer)
        return self._rid

    def forget(self, rid: int) -> None:
        pass

    #: Every request leaves whole at once: none is still held here.
    last_frame = 0

    def holds(self, frame: int) -> bool:
        return False

    def unread(self, frame: int) -> bool:
        return False

    def answer(self, seq: int, result: Any) -> None:
        self.sent[seq][1]((P.OK, [0, result]))


def _session(link: RecordingLink) -> Session:
    session = Session(owner="web", max_in_flight=64, link=lambda: link,  # type: ignore[arg-type, return-value]
                      drop=lambda _link, _reason: None, unreachable=RuntimeError)
    session.open = True
    session.id = REGISTERED_BASE + 1  # registered
    return session


async def test_the_floor_is_the_oldest_unanswered_op_whatever_the_answer_order() -> None:
    link = RecordingLink()
    session = _session(link)
    futures = [session.propose(ops.QUEUE_PUSH, ["q", i], timeout=30)[1] for i in range(5)]
    assert [link.sent[s][0] for s in range(1, 6)] == [1] * 5
    link.answer(2, "two")
    link.answer(4, "four")
    session.propose(ops.QUEUE_PUSH, ["q", 5], timeout=30)
    assert link.sent[6][0] == 1  # op 1 is still unanswered
    link.answer(1, "one")
    session.propose(ops.QUEUE_PUSH, ["q", 6], timeout=30)
    assert link.sent[7][0] == 3  # 1 and 2 answered, 3 not
    for seq in (3, 5, 6, 7):
        link.answer(seq, seq)
    last = session.propose(ops.QUEUE_PUSH, ["q", 7], timeout=30)[1]
    assert link.sent[8][0] == 8  # nothing older outstanding: the floor is the op itself
    link.answer(8, 8)
    assert [f.result() for f in futures] == ["one", "two", 3, "four", 5]
    assert await last == 8
    session.close()


class RegisteringLink(RecordingLink):
    """A greeted link that keeps each registration's answer callback, and each op's."""

    greeted = True
    open = True

    def __init__(self) -> None:
        super().__init__()
        self.registers: list[Callable[[Any], None]] = []
        self.forgotten: list[int] = []

    def request(self, frame: list[Any], on_answer: Callable[[Any], None]) -> int:
        assert frame[0] == P.REGISTER
        self.registers.append(on_answer)
        return 0

    def forget(self, rid: int) -> None:
        self.forgotten.append(rid)


UNKNOWN = [3, "session_unknown", "this client session is not held by the cluster"]
#: The ids the cluster registers for client "web" start above this.
WEB = REGISTERED_BASE + (owner_tag("web") << OWNER_SHIFT)


async def test_ops_wait_for_the_registered_id_and_go_once_it_is_known() -> None:
    link = RegisteringLink()
    session = _session(link)
    session.id = 0
    futures = [session.propose(ops.QUEUE_PUSH, ["q", i], timeout=30)[1] for i in range(3)]
    assert link.sent == {} and len(link.registers) == 1  # one registration for all
    link.registers[0]((P.OK, [0, WEB + 7]))
    assert session.id == WEB + 7 and sorted(link.sent) == [1, 2, 3]
    for seq in (1, 2, 3):
        link.answer(seq, None)
    assert [await f for f in futures] == [None, None, None]
    session.close()


async def test_a_forgotten_session_fails_the_ops_that_may_have_applied_and_renews() -> None:
    link = RegisteringLink()
    session = _session(link)
    _, first = session.propose(ops.QUEUE_PUSH, ["q", "in flight"], timeout=30)
    _, second = session.propose(ops.QUEUE_PUSH, ["q", "refused"], timeout=30)
    retried, third = session.propose(ops.QUEUE_PUSH, ["q", "retried"], timeout=30)
    retried.unknown = True  # an earlier attempt's link ended unanswered
    _, fourth = session.propose(ops.QUEUE_PUSH, ["q", "lost"], timeout=30)
    elsewhere, fifth = session.propose(ops.QUEUE_PUSH, ["q", "elsewhere"], timeout=30)
    elsewhere.link, elsewhere.unknown = RegisteringLink(), True  # in flight on an old link
    answers = {seq: on_answer for seq, (_, on_answer) in link.sent.items()}
    answers[2]((P.OK, UNKNOWN))  # refused: the cluster forgot the session
    with pytest.raises(P.SessionForgotten, match="outcome is unknown") as failed:
        await fifth  # nothing more will tell
    assert failed.value.applied is None and "queue_push" in str(failed.value)
    assert not any(f.done() for f in (first, third, fourth))  # their answers here tell
    assert sorted(link.forgotten) == [2, 5]  # no late answer of theirs is taken
    assert session.id == 0 and len(link.registers) == 1
    answers[1]((P.OK, UNKNOWN))  # refused too: its only attempt did not apply
    with pytest.raises(P.SessionForgotten, match="it was not applied") as failed:
        await first
    assert failed.value.applied is False
    answers[3]((P.OK, [0, "kept"]))  # applied before the cluster forgot the session
    assert await third == "kept"
    answers[4](None)  # its link ended unanswered
    with pytest.raises(P.SessionForgotten, match="outcome is unknown"):
        await fourth
    link.sent.clear()
    link.registers[0]((P.OK, [0, WEB + 9]))  # a new session, from seq 1
    assert sorted(link.sent) == [1] and link.sent[1][0] == 1
    link.answer(1, None)
    assert await second is None  # it applied nowhere: sent again under the new one
    assert session._ops == {}
    session.close()


async def test_a_refused_registration_fails_the_waiting_ops_unapplied() -> None:
    link = RegisteringLink()
    session = _session(link)
    session.id = 0
    _, future = session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    link.registers[0]((P.ERROR, ["refused", "session_register: no more ids"]))
    with pytest.raises(P.RequestRefused, match="could not register a session") as failed:
        await future
    assert "not applied" in str(failed.value)
    session.close()


class HoldingLink(RegisteringLink):
    """Numbers each op's frame by its seq; still holds, in part, those from seq 3 on."""

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Any], None]) -> int:
        self.last_frame = seq
        return super().send_op(seq, floor, code, args, timeout_ms, on_answer)

    def holds(self, frame: int) -> bool:
        return frame >= 3


async def test_a_forgotten_session_sends_again_the_ops_whose_requests_never_left() -> None:
    link = HoldingLink()
    session = _session(link)
    futures = [session.propose(ops.QUEUE_PUSH, ["q", n], timeout=30)[1] for n in range(4)]
    link.sent[2][1]((P.OK, UNKNOWN))
    assert sorted(link.forgotten) == [2, 3, 4]  # no late answer of the old session
    link.sent[1][1]((P.OK, UNKNOWN))  # its request had left: its own answer tells
    with pytest.raises(P.SessionForgotten) as failed:
        await futures[0]
    assert failed.value.applied is False
    link.sent.clear()
    link.registers[0]((P.OK, [0, WEB + 9]))
    assert sorted(link.sent) == [1, 2, 3]  # the refused one and the two held, renumbered
    for seq in (1, 2, 3):
        link.answer(seq, seq)
    assert [await f for f in futures[1:]] == [1, 2, 3]
    session.close()


async def test_an_op_waiting_for_a_slot_while_unlinked_fails_unsent_at_its_deadline() -> None:
    session = Session(owner="web", max_in_flight=1, link=lambda: None,
                      drop=lambda _link, _reason: None, unreachable=P.Unreachable)
    session.open = True
    holder = asyncio.ensure_future(session.call(ops.QUEUE_PUSH, ["q", 1], timeout=30))
    await asyncio.sleep(0)  # it holds the only slot, waiting for a link
    with pytest.raises(P.Unreachable, match=r"was not applied.*never sent") as failed:
        await session.call(ops.QUEUE_PUSH, ["q", 2], timeout=0.1)
    assert failed.value.applied is False
    assert not holder.done() and sorted(session._ops) == [1]  # the other got no number
    session.close()
    with pytest.raises(P.ClientClosed):
        await holder


@pytest.mark.parametrize("sid", [
    WEB + 2**64,  # beyond a session id: a hello naming it is refused
    REGISTERED_BASE + (((owner_tag("web") + 1) & 0xFFFF) << OWNER_SHIFT) + 7,  # another's
    REGISTERED_BASE - 1, -1, "7", None,
])
async def test_a_register_answered_with_no_id_of_this_client_is_not_taken(sid: Any) -> None:
    link = RegisteringLink()
    dropped: list[str] = []
    session = Session(owner="web", max_in_flight=64, link=lambda: link,  # type: ignore[arg-type, return-value]
                      drop=lambda _link, reason: dropped.append(reason),
                      unreachable=RuntimeError)
    session.open = True
    session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    link.registers[0]((P.OK, [0, sid]))
    assert session.id == 0 and link.sent == {}  # the next link registers again
    assert dropped and "no session id of this client" in dropped[0]
    # Not served: the client tries the other members, then pauses, before asking again.
    assert getattr(link, "cannot_commit", False) and not getattr(link, "served", False)
    session.close()


class UnreadLink(RecordingLink):
    """A link whose requests its member never read (they were still held here when it
    ended)."""

    def unread(self, frame: int) -> bool:
        return True


async def test_a_cancelled_pop_its_member_never_read_is_not_sent_again() -> None:
    """Its caller went away and it applied nowhere: sent on the next link it would pop
    elements only for its orphan handler to give them back."""
    first, second = UnreadLink(), RecordingLink()
    links: list[RecordingLink] = [first]
    session = Session(owner="web", max_in_flight=64, link=lambda: links[-1],  # type: ignore[arg-type, return-value]
                      drop=lambda _link, _reason: None, unreachable=RuntimeError)
    session.open, session.id = True, REGISTERED_BASE + 1
    orphans: list[Any] = []
    popping = asyncio.ensure_future(session.call(ops.QUEUE_POP_STAMPED, ["q", 1], timeout=30,
                                                 on_orphan=orphans.append))
    await asyncio.sleep(0)
    assert sorted(first.sent) == [1]
    popping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await popping
    assert sorted(session._ops) == [1]  # sent: its result is awaited for its handler
    first.sent[1][1](None)  # the link ended; the member never read the pop
    links.append(second)
    session.relinked(second)  # type: ignore[arg-type]
    assert second.sent == {} and session._ops == {} and orphans == []
    session.close()

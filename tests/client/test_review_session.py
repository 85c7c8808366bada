"""An outside review of what a client says about an operation it sent to more than one
member: an earlier member may have applied it, so no later answer makes it "not
applied"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.client import protocol as P
from lazily_queue.client.session import Session
from lazily_queue.raft.errors import CommitTimeout, NoQuorum
from lazily_queue.replicated import ops
from lazily_queue.replicated.results import encode_result
from lazily_queue.replicated.session_register import REGISTERED_BASE

pytestmark = pytest.mark.timeout(30)


class _Link:
    """Keeps the answer callback of each op sent instead of sending it."""

    features: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self.sent: dict[int, Callable[[Any], None]] = {}

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Any], None]) -> int:
        self.sent[seq] = on_answer
        return seq

    def forget(self, rid: int) -> None:
        pass

    #: Every request leaves whole at once: none is still held here.
    last_frame = 0
    #: Its member answered the hello (a take goes in the form its features say).
    greeted = True
    open = True
    #: Who it links to, and what it last heard (named by an op's timeout).
    member, address, pinged, heard = "1", "unix:/m1", None, 0.0

    def holds(self, frame: int) -> bool:
        return False

    def unread(self, frame: int) -> bool:
        return False


class _Client:
    """A session and the link it is on now."""

    def __init__(self) -> None:
        self.link: _Link | None = _Link()
        self.session = Session(owner="web", max_in_flight=8, link=lambda: self.link,  # type: ignore[arg-type, return-value]
                               drop=lambda _link, _reason: None, unreachable=RuntimeError)
        self.session.open = True
        self.session.id = REGISTERED_BASE + 1  # registered

    def relink(self) -> _Link:
        """The link ends before answering (what it sent may have applied); a new one."""
        assert self.link is not None
        for callback in self.link.sent.values():
            callback(None)
        self.session.unlinked()
        self.link = _Link()
        self.session.relinked(self.link)  # type: ignore[arg-type]
        return self.link


NOT_APPLIED = [
    ("commit_timeout", CommitTimeout,
     "queue_push waited for its turn past its timeout; it was not applied"),
    ("commit_timeout", CommitTimeout,
     "queue_push did not commit before its deadline; it was not applied. Leader: 2, term 3."),
    ("no_quorum", NoQuorum, "no quorum: node 2 reaches 1 of 3 members (1, 2, 3) and 2 are "
     "needed; writes are refused until a majority is reachable again"),
]


@pytest.mark.parametrize(("code", "kind", "message"), NOT_APPLIED)
async def test_a_retried_op_the_last_member_did_not_apply_has_an_unknown_outcome(
    code: str, kind: type[Exception], message: str,
) -> None:
    client = _Client()
    op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    if code in P.RETRYABLE:
        op.deadline = 0.0  # the answer arrives past the op's deadline: not retried
    second = client.relink()  # the first member may have applied it
    second.sent[1]((P.ERROR, [code, message]))
    with pytest.raises(kind) as failed:
        await future
    assert "outcome is unknown (it may have applied" in str(failed.value)
    assert message in str(failed.value)  # the member's own word stays
    client.session.close()


async def test_an_op_sent_to_one_member_keeps_its_answer() -> None:
    client = _Client()
    _op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    assert client.link is not None
    message = "queue_push waited for its turn past its timeout; it was not applied"
    client.link.sent[1]((P.ERROR, ["commit_timeout", message]))
    with pytest.raises(CommitTimeout) as failed:
        await future
    assert str(failed.value) == message
    client.session.close()


QUORUM_LOST = ("no quorum: node 3 reaches 1 of 3 members (1, 2, 3) and 2 are needed; "
               "writes are refused until a majority is reachable again")


@pytest.mark.parametrize("members", [1, 2])
async def test_an_error_names_its_op_on_the_first_member_and_after_a_failover(
    members: int,
) -> None:
    client = _Client()
    op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    op.deadline = 0.0  # answered past the op's deadline: not retried
    link = client.link if members == 1 else client.relink()
    assert link is not None
    link.sent[1]((P.ERROR, ["no_quorum", QUORUM_LOST]))
    with pytest.raises(NoQuorum) as failed:
        await future
    assert str(failed.value).startswith(f"queue_push: {QUORUM_LOST}")
    client.session.close()


async def test_a_members_word_for_the_wrapper_of_a_client_op_becomes_the_ops_name() -> None:
    client = _Client()
    _op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    assert client.link is not None
    client.link.sent[1]((P.ERROR, ["commit_timeout", "client_op did not commit before its "
                                   "deadline; it was not applied. Leader: 2, term 3."]))
    with pytest.raises(CommitTimeout) as failed:
        await future
    assert str(failed.value).startswith("queue_push did not commit before its deadline")
    client.session.close()


async def test_an_op_no_member_could_commit_names_itself_once() -> None:
    client = _Client()
    _op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=0.3)
    assert client.link is not None
    client.link.sent[1]((P.ERROR, ["no_quorum", QUORUM_LOST]))  # tried again until its timeout
    with pytest.raises(NoQuorum) as failed:
        await future
    assert str(failed.value).startswith(f"queue_push: {QUORUM_LOST}; no member could commit")
    assert str(failed.value).count("queue_push") == 1
    client.session.close()


NO_QUORUM = ("no_quorum", QUORUM_LOST, False)


async def test_an_op_every_member_answered_not_applied_says_so() -> None:
    client = _Client()
    op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    assert client.link is not None
    client.link.sent[1]((P.ERROR, list(NO_QUORUM)))  # not applied: tried on another
    second = _Link()
    client.link = second
    client.session.relinked(second)  # type: ignore[arg-type]
    op.deadline = 0.0  # the second answer arrives past the op's deadline: not retried
    second.sent[1]((P.ERROR, list(NO_QUORUM)))
    with pytest.raises(NoQuorum) as failed:
        await future
    assert failed.value.applied is False
    assert "outcome is unknown" not in str(failed.value)
    client.session.close()


async def test_an_op_that_timed_out_after_answers_of_not_applied_says_so() -> None:
    client = _Client()
    _op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=0.3)
    assert client.link is not None
    client.link.sent[1]((P.ERROR, list(NO_QUORUM)))  # tried again until its timeout
    with pytest.raises(NoQuorum) as failed:
        await future
    assert failed.value.applied is False
    assert str(failed.value).endswith("no member could commit it before its timeout, "
                                      "it was not applied")
    client.session.close()


@pytest.mark.parametrize("answer", [None, (P.ERROR, ["no_quorum", QUORUM_LOST])])
async def test_an_op_an_earlier_attempt_may_have_applied_stays_unknown(answer: Any) -> None:
    """A link that ended unanswered, or a member that did not say "not applied" (an
    older one), leaves the outcome unknown whatever later members answer."""
    client = _Client()
    op, future = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    assert client.link is not None
    if answer is None:
        second = client.relink()
    else:
        client.link.sent[1](answer)
        second = _Link()
        client.link = second
        client.session.relinked(second)  # type: ignore[arg-type]
    op.deadline = 0.0
    second.sent[1]((P.ERROR, list(NO_QUORUM)))
    with pytest.raises(NoQuorum) as failed:
        await future
    assert failed.value.applied is None
    assert "outcome is unknown" in str(failed.value)
    client.session.close()


async def test_closing_says_which_ops_may_have_applied() -> None:
    client = _Client()
    _sent, sent = client.session.propose(ops.QUEUE_PUSH, ["q", 1], timeout=30)
    client.link = None
    _unsent, unsent = client.session.propose(ops.QUEUE_PUSH, ["q", 2], timeout=30)
    client.session.close()
    with pytest.raises(P.ClientClosed, match="outcome is unknown") as first:
        await sent
    with pytest.raises(P.ClientClosed, match="it was not applied") as second:
        await unsent
    assert (first.value.applied, second.value.applied) == (None, False)


@pytest.mark.parametrize("applied", [False, None])
def test_a_members_error_carries_whether_the_op_applied(applied: bool | None) -> None:
    error = P.error_of(*P.error_payload(NoQuorum(QUORUM_LOST, applied=applied)))
    assert isinstance(error, NoQuorum)
    assert error.applied is applied
    assert P.error_of("no_quorum", QUORUM_LOST).applied is None  # an older member's


async def test_a_pop_past_its_deadline_that_may_have_applied_is_still_awaited_to_undo() -> None:
    """A pop whose first link ended unanswered (it may have applied) and whose next
    member answers that it cannot commit at the pop's deadline fails its caller, but is
    sent again on the next link under its number, so that its elements, once its result
    comes, are handed to the orphan handler (given back), not lost."""
    client = _Client()
    late: list[Any] = []
    op, future = client.session.propose(ops.QUEUE_POP_HEADERS, ["q", 1], timeout=30,
                                        on_orphan=late.append)
    second = client.relink()
    op.deadline = 0.0
    second.sent[1]((P.ERROR, list(NO_QUORUM)))
    with pytest.raises(NoQuorum) as failed:
        await future
    assert failed.value.applied is None and "outcome is unknown" in str(failed.value)
    third = client.relink()
    assert 1 in third.sent  # sent again under its number
    third.sent[1]((P.OK, encode_result((["x"], [[7, 1]], [{}]))))
    assert late == [(["x"], [[7, 1]], [{}])]
    client.session.close()


async def test_a_pop_a_member_timed_out_with_its_outcome_unknown_is_asked_again() -> None:
    """A member's ``commit_timeout`` for a pop it proposed (it may commit yet) fails the
    caller; the pop is asked again there under its number, and its late elements go to
    the orphan handler."""
    client = _Client()
    late: list[Any] = []
    _op, future = client.session.propose(ops.QUEUE_POP_HEADERS, ["q", 1], timeout=30,
                                         on_orphan=late.append)
    link = client.link
    assert link is not None
    first = link.sent.pop(1)
    first((P.ERROR, ["commit_timeout", "queue_pop_headers did not commit before its "
                     "deadline; its outcome is unknown (it may have applied)"]))
    with pytest.raises(CommitTimeout) as failed:
        await future
    assert failed.value.applied is None
    link.sent[1]((P.OK, encode_result((["x"], [[7, 1]], [{}]))))  # asked again: answered
    assert late == [(["x"], [[7, 1]], [{}])]
    client.session.close()


async def test_a_pop_expired_before_its_members_commit_timeout_is_still_asked_again() -> None:
    """The client's own deadline passes first (the pop's caller fails, the pop is kept
    to undo), then its member's ``commit_timeout`` arrives, about a round trip later: the
    pop is asked again under its number all the same, and its late elements go to the
    orphan handler."""
    client = _Client()
    late: list[Any] = []
    op, future = client.session.propose(ops.QUEUE_POP_HEADERS, ["q", 1], timeout=30,
                                        on_orphan=late.append)
    link = client.link
    assert link is not None
    first = link.sent.pop(1)
    op.deadline = 0.0
    client.session._sweep()
    with pytest.raises(CommitTimeout):
        await future
    assert op.orphaned and not op.done
    first((P.ERROR, ["commit_timeout", "queue_pop_headers did not commit before its "
                     "deadline; its outcome is unknown (it may have applied)"]))
    assert 1 in link.sent  # asked again there
    link.sent[1]((P.OK, encode_result((["x"], [[7, 1]], [{}]))))
    assert late == [(["x"], [[7, 1]], [{}])]
    client.session.close()

"""A client's session registration (client protocol 5): a mixin of
:class:`~.session.Session`.

The session has no id until the cluster registers one (:mod:`..replicated.session_register`):
its first op waiting on a greeted link asks the member (``REGISTER``, one commit at the
session's start, none per op), and its ops go once the id is known. The cluster refuses
an op under a registered session it no longer holds (``session_unknown``: idle for an
hour, given up for the bound on client sessions, or its end forgotten) and never applies
it. Then every op that may have applied (an attempt whose request left this process
and was not answered, or answered by none) fails with
:class:`~.protocol.SessionForgotten`, its outcome unknown, except one in flight on the
link the refusal came on: it waits for its own answer there (its result, when it
applied before the session was forgotten; ``applied`` ``False`` when it was refused too
and no other attempt of it was made). The others (never sent, or their request still
held, in part, by this process: no member read it) were applied nowhere, and go again,
renumbered, under a new session registered at once.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..replicated import ops
from ..replicated.client_sessions import owner_of
from ..replicated.results import decode_result
from ..replicated.session_register import REGISTERED_BASE
from ..replicated.state_machine import MAX_CLIENT_SESSIONS
from . import protocol as P
from .link import Answer, Link

if TYPE_CHECKING:
    from .session import _Op

#: The code of the state machine's answer to an op under a session it does not hold.
UNKNOWN_SESSION = "session_unknown"


def forgotten_error(op: _Op, applied: bool | None = None) -> P.SessionForgotten:
    """What an op in flight under a forgotten session fails with: ``applied`` ``None``
    when it may have applied, ``False`` when the cluster refused its only attempt."""
    outcome = ("it was not applied (the cluster refused it under the forgotten session, "
               "and no other attempt of it was made): send it again" if applied is False
               else "its outcome is unknown (an earlier attempt may have applied): read "
               "the object's state to learn whether it did")
    return P.SessionForgotten(
        f"{ops.op_name(op.code)}: the cluster forgot this client's session while the "
        "operation was in flight (the session was idle for an hour, given up for the bound "
        f"of {MAX_CLIENT_SESSIONS} client sessions while this client held the most, or its "
        f"end forgotten); {outcome}. The client registered a new session for its other "
        "operations; to keep sessions, open fewer clients under one name", applied=applied)


class Registering:
    """Registers the session's id and replaces a forgotten one (module docstring)."""

    #: Registrations answered with no session id of this client since the last that gave
    #: one (the client stops linking once each member answered so: :mod:`.dialling`).
    bad_answers = 0
    #: The key of the last op kept, under a negative number, for its answer under a
    #: forgotten session (:meth:`_forgotten`).
    _stale_key = 0
    #: Set once no member registers this client a session (:meth:`unregistered`): each
    #: later op fails with its like, unsent.
    unregistrable: Exception | None = None
    id: int
    #: The tag of the client's name that its session ids carry.
    owner_tag: int
    open: bool
    register_timeout: float
    _registering: Link | None
    _ops: dict[int, _Op]
    _next_seq: int
    _low: int
    _held: deque[_Op]
    _ungreeted: list[_Op]
    _link: Callable[[], Link | None]
    _drop: Callable[[Link, str], None]
    _on_registered: Callable[[Link], None]

    def relinked(self, link: Link) -> None:
        raise NotImplementedError

    def _finish(self, op: _Op, error: Exception | None) -> None:
        raise NotImplementedError

    def _resolve(self, op: _Op, result: Any) -> None:
        raise NotImplementedError

    def _register(self, link: Link) -> None:
        """Ask ``link``'s member for a session id, unless one is known or asked for."""
        if self.id or self._registering is link or not link.greeted or not link.open:
            return
        self._registering = link
        timeout_ms = min(3_600_000, max(1, math.ceil(self.register_timeout * 1000)))
        link.request([P.REGISTER, timeout_ms], lambda answer: self._registered(link, answer))

    def registering(self, link: Link) -> bool:
        """Whether a registration asked on ``link`` is unanswered."""
        return self._registering is link

    def _registered(self, link: Link, answer: Answer) -> None:
        if self._registering is not link:
            return  # a registration asked on another link since decides
        self._registering = None
        took = self._take_id(link, answer)
        self._on_registered(link)  # the client may leave ``link`` for the leader now
        if took and self._link() is link and link.open:
            self.relinked(link)  # every waiting op goes, in order

    def _take_id(self, link: Link, answer: Answer) -> bool:
        """Whether ``answer`` gave the session its id."""
        if answer is None or self.id or not self.open:
            return False  # the link ended: the next one registers
        status, payload = answer
        if status == P.OK:
            payload = _decoded(payload)
            if not self._ours(payload):
                link.cannot_commit = True  # the client tries the others, then pauses
                self.bad_answers += 1
                self._drop(link, "the member answered the register with no session id of "
                           "this client (a hello naming it would be refused)")
                return False
            link.served = True
            self.id, self.bad_answers = payload, 0
            return True
        code, message, *details = payload if isinstance(payload, list) and len(
            payload) >= 2 else ("refused", payload)
        if code not in P.REFUSALS:  # no commit there (or none in time): another member
            link.cannot_commit = code in P.RETRYABLE
            self._drop(link, f"registering a session: {code}: {message}")
            return False
        link.served = True
        for op in sorted(self._ops.values(), key=_seq):  # none was sent
            error = P.error_of(code, message, *details, op=ops.op_name(op.code))
            self._finish(op, type(error)(f"{error}; the client could not register a session "
                                         "for it, and it was not applied"))
        return False

    def unregistered(self, error: Exception) -> None:
        """No member registers this client a session: every op waiting for one (none
        was sent under an id the cluster holds) fails with ``error``, and so does each
        later op (:meth:`check_registrable`)."""
        self.unregistrable = error
        self._held.clear()
        self._ungreeted.clear()
        for op in sorted(self._ops.values(), key=_seq):
            self._finish(op, error)

    def check_registrable(self, code: int) -> None:
        """Raise, for op ``code`` about to be sent, when no member registers a session."""
        error = self.unregistrable
        if error is not None:
            raise P.Unreachable(f"{ops.op_name(code)}: {error}", applied=False)

    def _ours(self, sid: Any) -> bool:
        """Whether ``sid`` is a registered session id tagged as this client's: one a
        member takes in a hello (:func:`~.greeting.session_of`)."""
        return (type(sid) is int and REGISTERED_BASE <= sid < 2**64
                and owner_of(sid) == self.owner_tag)

    def _forgotten(self, link: Link, answered: _Op) -> None:
        """``answered`` was refused: the cluster no longer holds this session. An op in
        flight on ``link`` awaits its own answer there (:meth:`stale_answered`)."""
        self.id = 0
        self._held.clear()
        self._ungreeted.clear()
        kept: list[_Op] = []
        for op in sorted(self._ops.values(), key=_seq):
            if op.seq < 0:
                continue  # in flight under an earlier forgotten session
            if op is answered:
                if op.unknown:
                    self._finish(op, forgotten_error(op))
                else:
                    kept.append(op)
            elif _left(op) and op.link is link and link.open:
                self._stale_key -= 1
                del self._ops[op.seq]
                op.seq = self._stale_key
                self._ops[op.seq] = op
            elif op.unknown or _left(op):
                self._finish(op, forgotten_error(op))
            else:
                kept.append(op)
        self._ops = {seq: op for seq, op in self._ops.items() if seq < 0}
        for seq, op in enumerate(kept, 1):
            if op.rid:
                link.forget(op.rid)
            op.seq, op.rid = seq, 0
            self._ops[seq] = op
        self._next_seq, self._low = len(kept) + 1, 1
        if kept:
            self._register(link)

    def stale_answered(self, link: Link, op: _Op, answer: Answer) -> None:
        """The answer to ``op``, sent under a session the cluster has since forgotten:
        a result says it applied before the session was forgotten; a refusal under the
        forgotten session, that this attempt did not apply (nor any, with no other)."""
        applied: bool | None = None
        if answer is None:
            if link.unread(op.frame) and not op.unknown:
                applied = False
        elif answer[0] == P.OK:
            try:
                result = decode_result(answer[1])
            except Exception:  # unreadable: its outcome stays unknown
                result = UNREADABLE
            if not unknown_session(result) and result is not UNREADABLE:
                self._resolve(op, result)
                return
            if result is not UNREADABLE and not op.unknown:
                applied = False
        elif not op.unknown:  # its only attempt's error says what it did
            payload = answer[1]
            code, message, *details = payload if isinstance(payload, list) and len(
                payload) >= 2 else ("refused", payload)
            self._finish(op, P.error_of(code, message, *details, op=ops.op_name(op.code)))
            return
        self._finish(op, forgotten_error(op, applied))


#: A result the client could not read.
UNREADABLE = object()


def _left(op: _Op) -> bool:
    """Whether ``op``'s request may have reached a member: sent, and not still held, in
    part, by this process (:meth:`~.link.Link.holds`). A held one was never read; under
    the forgotten id it is refused if it ever is (the link's next session is registered
    after it), so it may go again under the new one."""
    return op.rid != 0 and (op.link is None or not op.link.holds(op.frame))


def _seq(op: _Op) -> int:
    return op.seq


def _decoded(payload: Any) -> Any:
    try:
        return decode_result(payload)
    except Exception:  # unreadable: no id
        return None


def unknown_session(result: Any) -> bool:
    """Whether ``result`` is the refusal of an op under a session the cluster forgot."""
    return type(result) is ops.OpError and result.code == UNKNOWN_SESSION

"""A client session's answers: a mixin of :class:`~.session.Session`.

An op answered with its result resolves (one answered ``session_unknown`` or
``no_room`` waits to go again: :mod:`.registration`, :mod:`.take_room`). One whose link
ended unanswered goes again on the next link, as not sent when its member never read
it, else as may have applied. A member that cannot commit is left for the next while
the op's deadline allows, and past it while an op that may have applied and whose
result can be undone (a pop's) is still awaited; a member's ``commit_timeout`` for such
an op asks that member again. A give-back refused at a member's gate goes again after a
pause when nobody awaits it, or when an earlier attempt's answer was lost
(:mod:`.popped`). Any other error fails the op, saying its outcome
is unknown when an earlier attempt's answer was lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..replicated import ops
from ..replicated.results import decode_result
from . import protocol as P
from .link import Answer, Link
from .popped import GIVE_BACKS, refused_pause, retry_refused
from .registration import unknown_session
from .take_room import no_room

if TYPE_CHECKING:
    from .session import _Op


class Answers:
    """Reads the member's answer to each op (module docstring)."""

    _link: Callable[[], Link | None]
    _drop: Callable[[Link, str], None]

    def _send(self, link: Link, op: _Op) -> None:
        raise NotImplementedError

    def _resolve(self, op: _Op, result: Any) -> None:
        raise NotImplementedError

    def _finish(self, op: _Op, error: Exception | None) -> None:
        raise NotImplementedError

    def _forgotten(self, link: Link, answered: _Op) -> None:
        raise NotImplementedError

    def _no_room(self, op: _Op) -> None:
        raise NotImplementedError

    def _orphaned(self, op: _Op, error: Exception, now: float) -> bool:
        raise NotImplementedError

    def stale_answered(self, link: Link, op: _Op, answer: Answer) -> None:
        raise NotImplementedError

    def _answered(self, link: Link, op: _Op, answer: Answer) -> None:
        if op.done:
            return
        if op.seq < 0:  # sent under a session the cluster forgot since (:mod:`.registration`)
            self.stale_answered(link, op, answer)
            return
        if answer is None:  # the link ended unanswered: the op goes again on the next one
            if link.unread(op.frame):
                op.rid = 0  # the member never read it: as if not sent
                if op.future.done() and not op.unknown:
                    self._finish(op, None)  # its caller went away: nothing to undo
            else:
                op.unknown = True
            return
        status, payload = answer
        unknown_before = op.unknown
        if status == P.OK:
            link.served = True
            try:
                result = decode_result(payload)
            except Exception:
                self._drop(link, "the member sent an unreadable result")
                return
            if unknown_session(result):
                self._forgotten(link, op)
            elif no_room(result):
                self._no_room(op)
            else:
                self._resolve(op, result)
            return
        code, message, *details = payload if isinstance(payload, list) and len(
            payload) >= 2 else ("refused", payload)
        error = P.error_of(code, message, *details, op=ops.op_name(op.code))
        if getattr(error, "applied", None) is not False:
            op.unknown = True
        now = asyncio.get_running_loop().time()
        told = self._unknown_before(error) if unknown_before else error  # if it fails now
        if code in P.RETRYABLE and (now < op.deadline or (
                op.unknown and self._orphaned(op, told, now))):
            # Sent again on the next link: before its deadline, or, past it, while an
            # attempt that may have applied is awaited to undo (a pop's elements).
            op.error = error
            op.rid = 0
            link.cannot_commit = True
            self._drop(link, f"{code}: {message}")
            return
        link.served = True
        if code == "permission" and op.code in GIVE_BACKS and (
                op.on_orphan is not None or unknown_before):
            pause = refused_pause(op.refusals)
            if pause is not None and asyncio.get_running_loop().time() < op.deadline:
                if op.on_orphan is None:  # its caller, failed at its deadline meanwhile,
                    error = retry_refused(error)  # learns its outcome is unknown
                self._refused_again(link, op, error, pause)
                return
        if code == "commit_timeout" and op.unknown and (
                (op.orphaned and now < op.deadline) or self._orphaned(op, told, now)):
            op.error, op.rid = error, 0  # its member may apply it yet: asked again there
            self._send(link, op)
            return
        if unknown_before and code == "permission" and op.code in GIVE_BACKS:
            error = retry_refused(error)  # this link's refusal alone (:mod:`.popped`)
        elif unknown_before and code not in P.REFUSALS:
            error = self._unknown_before(error)
        self._finish(op, error)

    @staticmethod
    def _unknown_before(error: Exception) -> Exception:
        """``error`` said of an op an earlier member may have applied: the member speaks
        for its own attempt only."""
        return type(error)(f"{error}; it was sent to an earlier member before, whose answer "
                           "was lost: its outcome is unknown (it may have applied there)")

    def _refused_again(self, link: Link, op: _Op, error: Exception, pause: float) -> None:
        """A give-back refused at ``link``'s member's gate (nobody awaits it, or an earlier
        attempt's answer was lost) goes again under its number after ``pause`` seconds,
        on whichever link is up then (a new link meanwhile does not send it sooner);
        every other time that member is left for the next (:func:`.popped.refused_pause`)."""
        op.refusals += 1
        op.error, op.rid = error, 0
        op.pausing = True

        def again() -> None:
            op.pausing = False
            current = self._link()
            if not op.done and op.rid == 0 and current is not None:
                self._send(current, op)

        asyncio.get_running_loop().call_later(pause, again)
        if op.refusals % 2 == 0:
            self._drop(link, "its gate refused a give-back its session popped (it may hold "
                       "no record of that pop: restored from a snapshot since)")

"""A client session's op deadlines: a mixin of :class:`~.session.Session`.

An op's timeout counts from its call: one still waiting for one of the client's
``max_in_flight`` slots at its deadline fails unsent (``applied`` False). While any op is
outstanding the session checks them every :data:`SWEEP_INTERVAL` seconds; an op past its
deadline fails with the last member's error (or
:class:`~.protocol.Unreachable`, or ``CommitTimeout``), saying whether it may have
applied. One whose request this process still holds, in part, when its deadline comes,
on a link that sent nothing more of it for :data:`STALLED` seconds (its member does not
read it), was not applied: the link is closed, dropping that request, and the op fails
saying so.
One that may have applied and has an ``on_orphan`` handler (a pop) fails its
caller but is still awaited for :data:`ORPHAN_HORIZON` seconds so its result can be
undone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import OperationFailed
from ..raft.errors import CommitTimeout
from ..replicated import ops
from .budget import Budget
from .link import Link

if TYPE_CHECKING:
    from .session import _Op

#: How long the result of a cancelled pop is still awaited (to return its elements).
ORPHAN_HORIZON = 600.0
#: An op whose request is still held here at its deadline fails as not applied, its
#: link closed, when no byte of the client left on that link for this long (seconds): a
#: link still sending is not closed for it, and the op may have applied.
STALLED = 1.0
#: How often outstanding operations are checked against their deadlines (seconds).
SWEEP_INTERVAL = 0.05


class Deadlines:
    """Expires the session's ops at their deadlines (module docstring)."""

    _ops: dict[int, _Op]
    _window: Budget
    _sweeper: asyncio.TimerHandle | None
    _link: Callable[[], Link | None]
    _unreachable: Callable[[str], Exception]

    def _finish(self, op: _Op, error: Exception | None) -> None:
        raise NotImplementedError

    def _sweep(self) -> None:
        """Expire the ops past their deadline; runs while any op is outstanding."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for op in [op for op in self._ops.values() if op.deadline <= now]:
            self._expire(op, now)
        self._sweeper = (loop.call_later(SWEEP_INTERVAL, self._sweep) if self._ops
                         else None)

    def _expire(self, op: _Op, now: float) -> None:
        link, unsent = op.link, False
        if (op.rid and link is not None and link.holds(op.frame)
                and (not link.open or link.stalled_for(now) >= STALLED)):
            # Its request is still leaving, and the link takes nothing more: closing it
            # drops the rest of the request.
            link.close("a request was still being sent at its operation's deadline")
            if link.holds(op.frame):  # as closed: what left before is known now
                link.forget(op.rid)
                op.rid, unsent = 0, not op.unknown
        maybe = op.maybe_applied()
        error = self._timeout_error(op, maybe, unsent=unsent)
        if not (maybe and self._orphaned(op, error, now)):
            self._finish(op, error)

    def _orphaned(self, op: _Op, error: Exception, now: float) -> bool:
        """Whether ``op``, which may have applied and failed its caller with ``error``,
        is still awaited a while so that its result can be undone (a pop's: given back):
        once, for :data:`ORPHAN_HORIZON` seconds, when it has an ``on_orphan`` handler."""
        if op.on_orphan is None or op.orphaned:
            return False
        if not op.future.done():
            op.future.set_exception(error)
        op.orphaned = True
        op.deadline = now + ORPHAN_HORIZON
        return True

    def _slot_timeout(self, code: int) -> Exception:
        """The error of an op whose deadline came while it waited for one of the
        client's ``max_in_flight`` slots: it was never sent."""
        name = ops.op_name(code)
        outcome = (f"it was not applied (it waited for one of the client's "
                   f"{self._window.size} in-flight slots, max_in_flight, and was never "
                   "sent: send fewer operations at once, raise max_in_flight, or give "
                   "this one a longer timeout)")
        if self._link() is None:
            error = self._unreachable(f"{name}: no member reachable before its timeout, "
                                      f"{outcome}")
        else:
            error = CommitTimeout(f"{name} did not commit before its timeout; {outcome}")
        if isinstance(error, OperationFailed):
            error.applied = False
        return error

    def _timeout_error(self, op: _Op, unknown: bool, *, unsent: bool = False) -> Exception:
        """``unsent``: its request was still being sent to the member (which did not read
        it in time), and the link closed dropping the rest."""
        outcome = ("its outcome is unknown (it may have applied)" if unknown
                   else "it was not applied")
        if unsent:
            outcome += (" (its request was still being sent: the member did not read it "
                        "in time; the link to it was closed)")
        name = ops.op_name(op.code)
        applied = None if unknown else False
        if op.error is not None:
            if unknown and getattr(op.error, "applied", None) is False:
                outcome = ("its outcome is unknown: that answer was to its last attempt, "
                           "and an earlier one may have applied")
            error = type(op.error)(f"{op.error}; no member could commit it before "
                                   f"its timeout, {outcome}")
        elif self._link() is None:
            error = self._unreachable(f"{name}: no member reachable before its timeout, "
                                      f"{outcome}")
        else:
            now = asyncio.get_running_loop().time()
            error = CommitTimeout(f"{name} did not commit before its timeout; {outcome}"
                                  f"{waited_on(op.link, now) or waited_on(self._link(), now)}")
        if isinstance(error, OperationFailed):
            error.applied = applied
        return error


def waited_on(link: Link | None, now: float) -> str:
    """What the member an op timed out on last did, for its error's message: silent
    (a ping unanswered: stopped, paused, overloaded) or answering without committing."""
    if link is None or not link.open:
        return ""
    who = f"member {link.member}" if link.member else link.address
    if link.pinged is not None:
        return (f" ({who} has sent nothing for {now - link.heard:.1f} s nor answered a ping "
                f"sent {now - link.pinged:.1f} s before: it may be stopped, paused or "
                "overloaded; the client moves to another member once it is silent for "
                "ping_timeout)")
    return (f" ({who} answers, its last frame {now - link.heard:.1f} s before, but did not "
            "commit it: it may know no leader, as during an election or with a majority "
            "of members down, or be slow)")

"""Whether a link's member takes an op before it is sent: a mixin of
:class:`~.session.Session` for the ops that depend on the member's hello (a consumer
group's declaration, a request over the smallest frame limit, a take or claim)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MessageTooLarge, UnsupportedOperation
from ..replicated import ops
from . import protocol as P
from .link import Link

if TYPE_CHECKING:
    from .session import _Op


class LinkFit:
    """Holds an op until its link's member answered the hello, or fails it unsent when
    that member cannot take it."""

    _ungreeted: list[_Op]

    def _finish(self, op: _Op, error: Exception | None) -> None:
        raise NotImplementedError

    def _serves_groups(self, link: Link, op: _Op) -> bool:
        """Whether ``link``'s member takes the group declaration ``op``. Until its hello
        is answered the op waits (:meth:`~.session.Session.greeted`); a member without
        client groups fails it unsent (it would apply the declaration, then not feed the
        mirror)."""
        if not link.greeted:
            self._ungreeted.append(op)
            return False
        if P.GROUPS_FEATURE in link.features:
            return True
        outcome = ("its outcome is unknown (it may have applied through an earlier member)"
                   if op.unknown else "it was not applied")
        self._finish(op, UnsupportedOperation(
            f"joining a consumer group: member {link.member} serves no consumer groups "
            "to clients (it runs an older lazily-queue); upgrade the members, or open "
            f"the group on a member; {outcome}"))
        return False

    def _sizable(self, link: Link, op: _Op) -> bool:
        """Whether the take or claim ``op`` (``take_bytes.SIZED_TAKES``) goes on ``link``
        now: only its member's hello says whether it takes the sized form
        (:mod:`.take_room`), so until it is answered the op waits
        (:meth:`~.session.Session.greeted`). Sent in the plain form to a member taking
        the sized one, it would not be held to its session's room and could give up the
        kept results of the session's takes still unanswered."""
        if link.greeted:
            return True
        self._ungreeted.append(op)
        return False

    def _fits(self, link: Link, op: _Op) -> bool:
        """Whether ``link``'s member reads the request frame of the large ``op``: a frame
        over its limit would make it drop the link (and the client send it again on the
        next, and the next). Until its hello is answered the op waits
        (:meth:`~.session.Session.greeted`); one over the limit the member said fails with
        ``MessageTooLarge``."""
        if not link.greeted:
            self._ungreeted.append(op)
            return False
        error = too_large(link, op.code, op.args, op.unknown)
        if error is None:
            return True
        self._finish(op, error)
        return False


def too_large(link: Link | None, code: int, encoded: bytes,
              unknown: bool = False) -> MessageTooLarge | None:
    """The error of the op ``code`` encoded as ``encoded`` when its request frame is over
    the limit ``link``'s member said in its hello (``None``: under it, or not said)."""
    limit = None if link is None else link.max_request
    size = len(encoded) + P.OP_FRAME_OVERHEAD
    if limit is None or size <= limit:
        return None
    assert link is not None
    outcome = ("its outcome is unknown (it may have applied through an earlier member)"
               if unknown else "it was not applied")
    return MessageTooLarge(
        f"{ops.op_name(code)}: the operation of {size} bytes exceeds the {limit}-byte "
        f"request limit of member {link.member} (its max_message_bytes and a command's "
        f"room); store large payloads elsewhere and queue a reference; {outcome}",
        size=size, limit=limit)

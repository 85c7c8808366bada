"""How a member serves the requests of a client's frame, once read: the requests of a
frame (one, or a batch), each checked and dispatched (an op held for the scheduler of
:mod:`.fair`, a hello, a watch, a barrier, a session registration, a ping), a proposal
made under the client's session and its answer sent once it applied, every request's
slots given back once answered. :class:`RequestServing` is a mixin of
:class:`~.server.ClientServer`, which sets up what it reads and reads the frames.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import MessageTooLarge, TooManyObjects, TooManySubscribers
from ..replicated import ops
from ..replicated.results import encode_result
from ..replicated.session_popped import REFUSED as GIVE_BACK_REFUSED
from ..replicated.session_register import UNKNOWN
from . import protocol as P
from .batching import PendingOp
from .connection import ClientConnection
from .fair import OpScheduler
from .fair_budget import FairBudget
from .greeting import Answering, hello, register
from .link_log import unreadable_frame
from .op_admission import admitted_op, timeout_of
from .ping import ping_answer
from .watchers import Watchers

if TYPE_CHECKING:
    from ..node import Node

log = logging.getLogger("lazily_queue.client.server")  # the client server's, as its links'


class RequestServing:
    """Serves the requests a :class:`~.server.ClientServer` reads (module docstring)."""

    node: Node
    #: Largest frame of requests read (told to a client in its hello's answer).
    max_request_bytes: int
    #: Requests refused or failed.
    refused: int
    _fair: OpScheduler
    _slots: FairBudget
    _watchers: Watchers

    def _release(self, conn: ClientConnection) -> None:
        conn.slots.give()
        self._slots.give()

    def _refuse(self, conn: ClientConnection, rid: int, code: str, message: str) -> None:
        self.refused += 1
        conn.send([rid, P.ERROR, [code, message]])

    def _fail(self, conn: ClientConnection, rid: int, error: BaseException) -> None:
        self.refused += 1
        conn.send([rid, P.ERROR, P.error_payload(error)])

    def _requests(self, conn: ClientConnection, frame: list[Any] | P.RequestRefused,
                  data: bytes) -> list[list[Any]]:
        """The requests of one frame (one, or a batch); refuses an unreadable frame
        (``data``), answering the request it starts with when its first bytes name one."""
        if isinstance(frame, P.RequestRefused):
            unreadable_frame(conn, str(frame))
            self._refuse(conn, P.request_id(data), "refused",
                         f"{frame}; nothing in it was applied")
            return []
        if frame[0] != 0 or frame[1] != P.BATCH:
            return [frame]
        items = frame[2] if len(frame) == 3 and isinstance(frame[2], list) else None
        if items is None or not all(isinstance(item, list) and len(item) >= 2
                                    and type(item[0]) is int and type(item[1]) is int
                                    for item in items):
            self._refuse(conn, 0, "refused", "a batch is [0, BATCH, [[id, kind, ...], ...]]; "
                         "nothing in it was applied")
            return []
        return items

    def _handle(self, conn: ClientConnection, frame: list[Any]) -> bool:
        """Serve one request; True when an answer will release its slots later."""
        rid, kind = frame[0], frame[1]
        if rid == 0 or kind not in P.REQUESTS:
            self._refuse(conn, rid, "refused", f"unknown request kind {kind} (or id 0)")
            return False
        try:
            if kind == P.OP:
                return self._op(conn, rid, frame)
            self._flush_ops(conn)  # in order: the ops read before this request go first
            if kind == P.HELLO:
                self._hello(conn, rid, frame)
            elif kind == P.WATCH:
                self._watchers.watch(conn, rid, frame)
            elif kind == P.UNWATCH:
                self._watchers.unwatch(conn, rid, frame)
            elif kind == P.BARRIER:
                return self._barrier(conn, rid, frame)
            elif kind == P.REGISTER:
                return register(self, conn, rid, frame)
            else:
                conn.send([rid, P.OK, ping_answer(self.node)])
        except (P.ClientError, MessageTooLarge, TooManyObjects, TooManySubscribers) as exc:
            self._fail(conn, rid, exc)
        except Exception as exc:  # a request no check foresaw: refused, its slots given back
            log.exception("client %r: request %d failed", conn.grant.name, rid)
            self._fail(conn, rid, P.RequestRefused(
                f"the member could not serve this request ({type(exc).__name__}); nothing "
                "was applied"))
        return False

    def _hello(self, conn: ClientConnection, rid: int, frame: list[Any]) -> None:
        hello(self, conn, rid, frame)  # :func:`.greeting.hello`

    def timeout(self, value: Any) -> float:
        """Seconds of a request's ``timeout_ms`` (:func:`.op_admission.timeout_of`)."""
        return timeout_of(value)

    def _op(self, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        conn.ops.append(admitted_op(self.node, conn, rid, frame))  # :mod:`.op_admission`
        return True

    def _flush_ops(self, conn: ClientConnection) -> None:
        """Hand the ops read so far to the scheduler (:mod:`.fair`)."""
        pending, conn.ops = conn.ops, []
        if pending and conn.session is not None:
            self._fair.add(conn, conn.session, pending)

    def _propose(self, conn: ClientConnection, rid: int, code: int, args: list[Any],
                 timeout: float, answer: Answering | None = None,
                 on_orphan: Callable[[Any], None] | None = None) -> bool:
        """Propose through the member's replica; the answer goes out once it applied
        (``answer``: :meth:`_answer` or one in its place). With ``on_orphan``, a
        proposal whose deadline passed while it may still apply is kept, and its late
        result goes there (its answer was the deadline's error)."""
        driver = self.node.driver
        reply = self._answer if answer is None else answer
        try:
            if not driver.running or driver.disk_error is not None:
                driver.propose(code, args, timeout=timeout)  # raises why it cannot
            driver.replica.propose(code, args, timeout=timeout,
                                   on_done=lambda result, error: reply(
                                       conn, rid, result, error), on_orphan=on_orphan)
        except Exception as exc:  # not running, no disk, a value replicas would refuse
            self._fail(conn, rid, exc)
            return False
        driver.wake()
        return True

    def _barrier(self, conn: ClientConnection, rid: int, frame: list[Any]) -> bool:
        if len(frame) != 3:
            raise P.RequestRefused("a barrier is [id, BARRIER, timeout_ms]")
        timeout = self.timeout(frame[2])

        def propose() -> None:
            if not self._propose(conn, rid, ops.BARRIER, [], timeout):
                self._release(conn)

        return self._fair.after(conn, propose, lambda: self._release(conn)) or \
            self._propose(conn, rid, ops.BARRIER, [], timeout)

    def _answer_op(self, conn: ClientConnection, op: PendingOp, result: Any,
                   error: BaseException | None) -> None:
        if type(result) is ops.OpError:
            if result.code == UNKNOWN.code:
                conn.session_lost = True  # the link may register another (:mod:`.greeting`)
            elif result.code == GIVE_BACK_REFUSED:  # as it applied (:mod:`.popped`)
                result, error = None, P.PermissionDenied(result.message)
        self._answer(conn, op.rid, result, error)

    def _answer(self, conn: ClientConnection, rid: int, result: Any,
                error: BaseException | None) -> None:
        self._release(conn)
        if error is not None:
            conn.send_answer([rid, P.ERROR, P.error_payload(error)])
        else:
            conn.send_answer([rid, P.OK, encode_result(result)])

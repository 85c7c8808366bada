"""Session: a client's operations until answered, under its session id (registered by
the cluster before its first operation goes, :mod:`.registration`).

Every operation gets the next sequence number of the session; the member it is sent
to proposes it wrapped in ``CLIENT_OP``, so the replicated state machine applies it
once however often it is sent. The session sends each operation on the current link
(again on every new link until answered), keeps at most ``CLIENT_WINDOW`` sequence
numbers above its floor (the oldest unanswered one) outstanding, and fails an
operation at its deadline with the last member's error, saying whether it may have
applied. An operation whose caller went away while it may apply, and which has an
``on_orphan`` handler (a pop), is still awaited for :data:`ORPHAN_HORIZON` seconds so
its result can be undone (:mod:`.deadlines`).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import check_loop
from ..raft.errors import CommitTimeout
from ..raft.proposals import commit_deadline
from ..replicated import ops
from ..replicated.client_sessions import owner_tag
from ..replicated.state_machine import CLIENT_WINDOW
from ..replicated.take_bytes import SIZED_TAKES
from ..storage.runs import together
from . import protocol as P
from .answers import Answers
from .budget import Budget
from .deadlines import ORPHAN_HORIZON as ORPHAN_HORIZON
from .deadlines import SWEEP_INTERVAL as SWEEP_INTERVAL
from .deadlines import Deadlines
from .link import Answer, Link
from .link_fit import LinkFit, too_large
from .op_args import MAX_OP_BYTES as MAX_OP_BYTES
from .op_args import encode_args
from .registration import Registering
from .take_room import TakeRoom

log = logging.getLogger(__name__)

class _Op:
    """One operation until its answer arrives; called with the answer of the link it
    was last sent on (a link ends, calling back with ``None``, before the next starts)."""

    __slots__ = ("args", "attempts", "code", "deadline", "done", "error", "frame", "future",
                 "link", "on_orphan", "orphaned", "pausing", "refusals", "rid", "roomless",
                 "seq", "session", "unknown")

    def __init__(self, session: Session, seq: int, code: int, args: bytes, deadline: float,
                 future: asyncio.Future[Any], on_orphan: Callable[[Any], None] | None) -> None:
        self.session = session
        self.seq, self.code, self.args, self.deadline = seq, code, args, deadline
        self.future, self.on_orphan = future, on_orphan
        self.rid = 0
        #: The link's frame its request went out in (:meth:`Link.holds`).
        self.frame = 0
        self.link: Link | None = None
        self.attempts = 0
        self.done = self.orphaned = False
        #: Answered ``no_room`` and sent again under another number (:mod:`.take_room`).
        self.roomless = False
        #: Times a member's gate refused it (a give-back nobody awaits: :mod:`.popped`).
        self.refusals = 0
        #: Waiting out the pause after such a refusal: no new link sends it before.
        self.pausing = False
        self.error: Exception | None = None
        #: An attempt may have applied: sent on a link that ended unanswered, or answered
        #: with an error that did not say it was not applied.
        self.unknown = False

    def maybe_applied(self) -> bool:
        """Whether it may have applied: :attr:`unknown`, or sent and not yet answered."""
        return self.unknown or self.rid != 0

    def __call__(self, answer: Answer) -> None:
        link = self.link
        if link is not None:
            self.session._answered(link, self, answer)


class Session(Registering, Deadlines, LinkFit, TakeRoom, Answers):
    """A client's outstanding operations (module docstring); the
    :class:`~lazily_queue.storage.replicated_object.Proposer` of its remote storages.
    Its id is registered by the cluster (:mod:`.registration`).

    ``link()`` is the current link (``None`` while unlinked), ``drop(link, reason)``
    leaves a member that cannot commit, ``unreachable(what)`` builds the error of an
    operation that found no member, ``registered(link)`` hears that the registration
    asked on ``link`` was answered.
    """

    def __init__(
        self, *, owner: str, max_in_flight: int, link: Callable[[], Link | None],
        drop: Callable[[Link, str], None], unreachable: Callable[[str], Exception],
        register_timeout: float = 10.0, registered: Callable[[Link], None] | None = None,
    ) -> None:
        #: Registered by the cluster, tagged with the client's name ``owner``
        #: (:mod:`...replicated.session_register`); 0 until then.
        self.id = 0
        self.owner_tag = owner_tag(owner)
        self.register_timeout = register_timeout
        #: The link a registration was asked on, until its answer.
        self._registering: Link | None = None
        #: Called with the link a registration was answered on (or ended unanswered).
        self._on_registered: Callable[[Link], None] = registered or (lambda link: None)
        self.open = False
        #: The event loop the client was started on (its ops are sent from it alone).
        self.loop: asyncio.AbstractEventLoop | None = None
        self._link = link
        self._drop = drop
        self._unreachable = unreachable
        self._next_seq = 1
        #: No op below this sequence number is outstanding (see :meth:`_floor`).
        self._low = 1
        self._ops: dict[int, _Op] = {}
        self._window = Budget(max_in_flight)
        self._held: deque[_Op] = deque()
        #: Group declarations waiting for the linked member's features.
        self._ungreeted: list[_Op] = []
        self._sweeper: asyncio.TimerHandle | None = None

    @property
    def running(self) -> bool:
        """False before the client starts and once it closed."""
        return self.open

    def check_loop(self) -> None:
        """Raise ``ThreadSafetyError`` unless called on the loop the client runs on."""
        check_loop(self.loop, "the client")

    def owner(self) -> str:
        """The client, as errors name it."""
        return "the client"

    def unreachable(self) -> Exception | None:
        """While the open client is linked to no member, or to one not yet known to be
        able to commit after the last one said it could not (:attr:`.link.Link.doubt`):
        the error naming each address's failure (``Unreachable``), which a wait reaching
        its deadline raises then; ``None`` otherwise."""
        link = self._link()
        if not self.open or (link is not None and link.doubt is None):
            return None
        return self._unreachable("no member reachable" if link is None else
                                 f"no member reachable that can commit ({link.doubt})")

    def relinked(self, link: Link) -> None:
        """A new link: every unanswered operation is sent on it, in order, but a give-back
        waiting out its pause after a refusal (it goes once the pause is over)."""
        self._held.clear()
        self._ungreeted.clear()
        for op in list(self._ops.values()):
            # not one awaiting its answer under a forgotten session
            if op.seq > 0 and not op.pausing:
                self._send(link, op)

    def greeted(self, link: Link) -> None:
        """``link``'s member answered the hello: the ops waiting for its features go."""
        waiting, self._ungreeted = self._ungreeted, []
        for op in waiting:
            if not op.done and op.rid == 0:  # not sent since (nor listed twice)
                self._send(link, op)
        if not self.id and self._ops:
            self._register(link)

    @property
    def proposed(self) -> bool:
        """Whether an op was proposed under this session id."""
        return self.id != 0 and self._next_seq > 1

    def renew(self, owner: str) -> None:
        """Leave the session (the cluster ended it): the next op registers another;
        only while closed."""
        self.id, self._next_seq, self._low = 0, 1, 1
        self.owner_tag = owner_tag(owner)

    def refused(self, link: Link, error: Exception) -> None:
        """``link``'s member closed it with ``error``: the ops sent on it fail with it at
        their timeout, unless a member commits them before."""
        for op in self._ops.values():
            if op.link is link and not op.done:
                op.error = error

    def unlinked(self) -> None:
        for op in self._ops.values():
            op.rid = 0

    def close(self) -> None:
        """Fail every outstanding operation with :class:`ClientClosed`."""
        self.open = False
        self._registering = None
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        for op in list(self._ops.values()):
            maybe = op.maybe_applied()
            outcome = "its outcome is unknown" if maybe else "it was not applied"
            self._finish(op, P.ClientClosed(f"{ops.op_name(op.code)}: the client closed; "
                                            f"{outcome}", applied=None if maybe else False))

    def encode(self, code: int, args: list[Any]) -> bytes:
        """The op for :meth:`propose`'s ``encoded``: raises what :meth:`propose` would
        refuse ``args`` with (over the request limit of the member linked now, when
        it said one: ``MessageTooLarge``); sends nothing."""
        encoded = encode_args(code, args)
        error = too_large(self._link(), code, encoded)
        if error is not None:
            raise error
        return encoded

    def propose(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None, encoded: bytes | None = None,
    ) -> tuple[Any, asyncio.Future[Any]]:
        """Send one op (``encoded`` as :meth:`encode` gave it, or ``None``); the future
        resolves with its result once the member applied it.

        Raises :class:`ClientClosed` when closed, ``UnsupportedValue`` for a value CBOR
        cannot carry, ``ValueError`` for an op over the replicated command limit and
        ``CommitTimeout`` for a ``timeout`` of 0 (nothing sent); the member refuses
        values its replicas would not decode.
        """
        if not self.open:
            raise P.ClientClosed("the client is not started; use `async with client:`")
        self.check_loop()
        self.check_registrable(code)
        if encoded is None:
            encoded = encode_args(code, args)
        loop = asyncio.get_running_loop()
        now = loop.time()
        deadline = commit_deadline(now, timeout)
        if deadline <= now:  # a timeout of 0: no time to commit in, so nothing is sent
            raise CommitTimeout(f"{ops.op_name(code)} did not commit before its timeout "
                                "(0 s: it was not sent); it was not applied", applied=False)
        seq = self._next_seq
        self._next_seq += 1
        op = _Op(self, seq, code, encoded, deadline, loop.create_future(), on_orphan)
        self._ops[seq] = op
        if self._sweeper is None:
            self._sweeper = loop.call_later(SWEEP_INTERVAL, self._sweep)
        link = self._link()
        if link is not None:
            self._send(link, op)
        return op, op.future

    async def call(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None, encoded: bytes | None = None,
    ) -> Any:
        """Propose and await (at most ``max_in_flight`` at once); a cancelled caller's op
        is abandoned, or with ``on_orphan`` awaited on its behalf. ``timeout`` counts from
        the call: an op still waiting for a slot at its deadline fails unsent
        (:meth:`_slot_timeout`)."""
        self.check_loop()
        window = self._window
        if window.ready:
            window.free -= 1  # Budget.take without a suspension
        else:
            loop = asyncio.get_running_loop()
            deadline = commit_deadline(loop.time(), timeout)
            try:
                async with asyncio.timeout_at(deadline):
                    await window.take()
            except TimeoutError:
                raise self._slot_timeout(code) from None
            timeout = deadline - loop.time()
        try:
            op, fut = self.propose(code, args, timeout=timeout, on_orphan=on_orphan,
                                   encoded=encoded)
            try:
                return await fut
            except asyncio.CancelledError:
                if not op.done and (op.attempts == 0 or op.on_orphan is None):
                    self._finish(op, None)
                raise
        finally:
            window.give()

    async def call_many(
        self, code: int, args: list[list[Any]], encoded: list[bytes], *, timeout: float,
    ) -> list[Any]:
        """:meth:`call` for every one of ``args`` (``encoded[i]`` as :meth:`encode` gave
        it), under way together; the results in order. Once all have ended the first
        failure raises."""
        return await together(
            lambda pair: self.call(code, pair[0], timeout=timeout, encoded=pair[1]),
            list(zip(args, encoded, strict=True)))

    def _floor(self) -> int:
        """The oldest unanswered sequence number (the next one when none is).

        Ops are answered mostly in order: walking up from the last floor costs each
        sequence number once, where iterating the dict would first skip every answered
        op still in its table."""
        low, outstanding, end = self._low, self._ops, self._next_seq
        while low < end and low not in outstanding:
            low += 1
        self._low = low
        return low

    def _send(self, link: Link, op: _Op) -> None:
        if not self.id:  # sent once registered
            self._register(link)
            return
        if op.code == ops.GROUP_DECLARE and not self._serves_groups(link, op):
            return
        if op.code in SIZED_TAKES and not self._sizable(link, op):
            return
        if len(op.args) + P.OP_FRAME_OVERHEAD > P.MIN_REQUEST_BYTES and not self._fits(link, op):
            return
        floor = self._floor()
        if op.seq >= floor + CLIENT_WINDOW:
            # The member keeps CLIENT_WINDOW results above the floor: wait for the oldest.
            self._held.append(op)
            return
        if op.roomless and op.seq != floor:
            return  # it goes once the oldest unanswered (:mod:`.take_room`)
        remaining = op.deadline - asyncio.get_running_loop().time()
        timeout_ms = min(3_600_000, max(1, math.ceil(remaining * 1000)))
        op.attempts += 1
        op.link = link
        if P.TAKE_ROOM_FEATURE in link.features:
            floor = -floor  # the sized form (:mod:`.take_room`)
        op.rid = link.send_op(op.seq, floor, op.code, op.args, timeout_ms, op)
        op.frame = link.last_frame

    def _send_held(self) -> None:
        """Send the ops held back by the session window that fit in it now."""
        link, held = self._link(), self._held
        if link is None:
            return
        limit = self._floor() + CLIENT_WINDOW
        while held and (held[0].done or held[0].seq < limit):
            op = held.popleft()
            if not op.done:
                self._send(link, op)

    def _resolve(self, op: _Op, result: Any) -> None:
        self._done(op)
        if not op.future.done():
            op.future.set_result(result)
        elif op.on_orphan is not None:
            try:
                op.on_orphan(result)
            except Exception:
                log.exception("handling the late result of %s failed", ops.op_name(op.code))

    def _finish(self, op: _Op, error: Exception | None) -> None:
        self._done(op)
        if error is not None and not op.future.done():
            op.future.set_exception(error)
        link = self._link()
        if link is not None and op.rid:
            link.forget(op.rid)

    def _done(self, op: _Op) -> None:
        """``op`` is answered or failed: the ops waiting for it go."""
        op.done = True
        self._ops.pop(op.seq, None)
        if self._held:
            self._send_held()
        if self._roomless:
            self._roomless_done(op)

"""A cluster client with several ops in flight whose session the cluster forgets, as a
real client of protocol 5 takes it: through the client's own
:meth:`~lazily_queue.client.registration.Registering._forgotten`.

A :class:`ForgettingClient` registers its session under the registering clients' owner
tag (:mod:`.registered_sessions`: few client sessions are kept, so theirs are given up
for the bound while ops are on the way), declares :data:`~.registered_sessions.REG_QUEUE`
and pushes unique values to it, up to :data:`WINDOW` at once, each under the next
sequence number, on a link to one member. A share of the requests stay held in the
link (:data:`HELD`: the member reads them later, one at a time), as a member busy
reading a large request holds the next ones in the socket. A link ends when its member
crashes, cannot commit, drops before an answer arrives (:data:`ANSWER_LOST`) or the
client moves on: its requests still held are never read (the op goes again on the next
link), the others may have applied (the op is ``unknown``, and goes again under its
number).

When an op is answered ``session_unknown``, the real ``_forgotten`` decides, on the
client's real ``_Op`` records: an op whose request left this process (read by a member)
on the link the refusal came on waits there for its own answer, as the real client's
does (kept under a negative number, never sent again): the real
:meth:`~lazily_queue.client.registration.Registering.stale_answered` takes it (a result
resolves it; the same refusal, with no earlier attempt, fails it ``applied`` ``False``;
the link ending, or an earlier attempt, leaves its outcome unknown). The other ops that
left, or that are ``unknown``, fail (``SessionForgotten``, outcome unknown); the rest go
again, renumbered, under a new session. Those sent again and those failed ``applied``
``False`` are reported to the checker as not applied under their old number: the
checker fails the run if that number ever applies (a held request read after the
session was forgotten must be refused), and the registered-sessions model if a value is
in the queue twice.
"""

from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from lazily_queue.client import protocol as P
from lazily_queue.client.link import Answer, Link
from lazily_queue.client.registration import Registering
from lazily_queue.client.session import _Op
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.results import encode_result
from lazily_queue.replicated.session_register import REGISTERED_BASE, UNKNOWN

from .client import FAILED, OK, Client, Observed
from .client import UNKNOWN as UNKNOWN_OUTCOME
from .registered_sessions import REG_QUEUE, REG_TAG, register_args

if TYPE_CHECKING:
    from .cluster import Cluster

#: Ops in flight at most.
WINDOW = 4
#: The share of requests held in the link for a while before the member reads them.
HELD = 0.3
#: The share of answers lost with their link (the op applied; it goes again, unknown).
ANSWER_LOST = 0.1
#: The chance, at each act, of a pause in new pushes.
PAUSE = 0.25


class _SimLink:
    """A link to one member process: the request frames it still holds (unread)."""

    def __init__(self, node: str, incarnation: int) -> None:
        self.node, self.incarnation = node, incarnation
        self.open = True
        self.held: set[int] = set()
        self.forgotten: set[int] = set()

    def holds(self, frame: int) -> bool:
        return frame in self.held

    def unread(self, frame: int) -> bool:
        return self.holds(frame)

    def forget(self, rid: int) -> None:
        self.forgotten.add(rid)


class _Session(Registering):
    """The state the real ``_forgotten`` and ``stale_answered`` work on; ``_finish`` and
    ``_resolve`` note how each op ended."""

    def __init__(self) -> None:
        self.id = 0
        self.owner_tag = REG_TAG
        self.open = True
        self.register_timeout = 10.0
        self._registering = None
        self._ops: dict[int, _Op] = {}
        self._next_seq = 1
        self._low = 1
        self._held: deque[_Op] = deque()
        self._ungreeted: list[_Op] = []
        #: Ops failed since the client last looked, with their errors.
        self.failed: list[tuple[_Op, Exception | None]] = []
        #: Ops resolved since the client last looked, with their results.
        self.resolved: list[tuple[_Op, Any]] = []

    def _finish(self, op: _Op, error: Exception | None) -> None:
        op.done = True
        self._ops.pop(op.seq, None)
        self.failed.append((op, error))

    def _resolve(self, op: _Op, result: Any) -> None:
        op.done = True
        self._ops.pop(op.seq, None)
        self.resolved.append((op, result))

    def _register(self, link: Link) -> None:
        return None  # the client registers at its next act

    def floor(self) -> int:
        """The oldest unanswered number of this session (an op awaiting its answer
        under a forgotten one, numbered below 0, is none of its)."""
        return min((seq for seq in self._ops if seq > 0), default=self._next_seq)


class ForgettingClient(Client):
    """Pushes several at once under a registered session (module docstring)."""

    kind = "forgetting"

    def __init__(self, cid: str, cluster: Cluster, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.sim = cluster
        self.s = _Session()
        self.link: _SimLink | None = None
        self.n = 0
        self.rids = 0
        self.frames = 0
        #: The arguments of each op.
        self.args: dict[_Op, list[Any]] = {}
        self.declared = False
        self.quiet_until = 0.0
        self.relink_at = 0.0
        #: The declaration until it is answered.
        self.declaring: _Op | None = None
        #: The ops awaiting their own answer under a forgotten session: its id and
        #: their number under it.
        self.stale: dict[_Op, tuple[int, int]] = {}
        #: Counts: sessions forgotten; ops sent again, failed SessionForgotten (outcome
        #: unknown); held requests read after their session was forgotten; ops that
        #: awaited their own answer under a forgotten session, of them those answered with
        #: their result (applied before) and those failed as not applied.
        self.forgotten = 0
        self.sent_again = 0
        self.failed_forgotten = 0
        self.late_held = 0
        self.waited = 0
        self.stale_applied = 0
        self.stale_not_applied = 0

    @property
    def settled(self) -> bool:
        return not self.busy and (not self.s._ops or self.stopped)

    def next_op(self) -> None:
        s = self.s
        if s.id == 0:
            if self.draining:
                self.stopped = True  # what is kept was applied nowhere: given up
                return
            self.call(C.SESSION_REGISTER, register_args(REG_TAG, self), self._registered,
                      timeout=self.rng.uniform(0.3, 2.0))
            return
        if not self.draining and not self.declared:
            if self.declaring is None:
                self.declaring = self._new_op(C.QUEUE_DECLARE, [REG_QUEUE, None])
        elif not self.draining and self.sim.now() >= self.quiet_until:
            # Pushes once the declaration was answered; now and then a pause (its session
            # the least recently seen: the first its owner's given up at the bound).
            if self.rng.random() < PAUSE:
                self.quiet_until = self.sim.now() + self.rng.uniform(0.3, 1.5)
            for _ in range(self.rng.randint(0, WINDOW - len(s._ops))):
                self.n += 1
                self._new_op(C.QUEUE_PUSH, [REG_QUEUE, f"{self.cid}:{self.n}"])
        elif not s._ops:
            self.stopped = True
            return
        if self.sim.now() < self.relink_at:
            return
        link = self._current_link()
        for op in sorted(s._ops.values(), key=lambda o: o.seq):
            if op.seq > 0 and op.rid == 0 and link.open:  # not one awaiting its answer
                self._send(link, op)

    def _registered(self, obs: Observed) -> None:
        if obs.outcome == OK and type(obs.result) is int and obs.result >= REGISTERED_BASE:
            self.s.id = obs.result
        else:
            self._leave()

    def _new_op(self, code: int, args: list[Any]) -> _Op:
        s = self.s
        op = _Op(cast(Any, None), s._next_seq, code, b"", float("inf"), cast(Any, None), None)
        self.args[op] = args
        s._ops[op.seq] = op
        s._next_seq += 1
        return op

    def _args(self, op: _Op) -> list[Any]:
        return self.args[op]

    def _current_link(self) -> _SimLink:
        incarnation = self.sim.nodes[self.node].incarnation
        link = self.link
        if link is None or not link.open or link.node != self.node or (
                link.incarnation != incarnation):
            if link is not None:
                self._ended(link)
            link = self.link = _SimLink(self.node, incarnation)
        return link

    def _ended(self, link: _SimLink) -> None:
        """``link`` ended: as the session's ``_answered`` with no answer."""
        if not link.open:
            return
        link.open = False
        for op in list(self.s._ops.values()):
            if op.link is cast(Any, link) and op.rid:
                if op.seq < 0:  # under a forgotten session: it ends unanswered
                    self._stale_answered(link, op, None)
                    continue
                if not link.holds(op.frame):
                    op.unknown = True
                op.rid = 0

    def _leave(self) -> None:
        if self.link is not None:
            self._ended(self.link)
        running = [n for n in self.cluster.member_ids()
                   if self.cluster.running(n) and n != self.node]
        if running:
            self.node = self.rng.choice(running)

    def _send(self, link: _SimLink, op: _Op) -> None:
        self.rids += 1
        self.frames += 1
        op.rid, op.frame, op.link = self.rids, self.frames, cast(Any, link)
        request = (self.s.id, op.seq, self.s.floor(), op.code, self._args(op))
        if self.rng.random() < HELD:
            link.held.add(op.frame)
            frame, rid = op.frame, op.rid

            def read() -> None:
                if link.open and frame in link.held:
                    link.held.discard(frame)
                    if request[0] != self.s.id:
                        self.late_held += 1  # read under a session since forgotten
                    self._propose(link, op, rid, request)

            self.sim.at(self.sim.now() + self.rng.uniform(0.02, 1.5), read)
            return
        self._propose(link, op, op.rid, request)

    def _propose(self, link: _SimLink, op: _Op, rid: int,
                 request: tuple[int, int, int, int, list[Any]]) -> None:
        session, seq, floor, code, args = request
        obs = Observed(self.cid, link.node, session, seq, code, list(args), self.cluster.now())

        def done(result: Any, error: BaseException | None) -> None:
            self._answered(link, op, rid, obs, result, error)

        p = self.cluster.propose(self, link.node, C.CLIENT_OP,
                                 [session, seq, floor, code, *args],
                                 timeout=self.rng.uniform(0.3, 2.0), on_done=done,
                                 on_orphan=None)
        if p is None:  # the member cannot take it: the link ends unread
            link.held.add(op.frame)
            if link is self.link:
                self._leave()
            return
        self.ops.append(obs)
        self.cluster.track(link.node, self, obs, p)

    def _answered(self, link: _SimLink, op: _Op, rid: int, obs: Observed, result: Any,
                  error: BaseException | None) -> None:
        obs.outcome, obs.result = UNKNOWN_OUTCOME, result
        self.cluster.observed(obs)
        current = not op.done and op.rid == rid and rid not in link.forgotten
        if error is not None:
            obs.result = type(error).__name__
            if current and link is self.link:
                self._leave()  # the op goes again on the next link, unknown
            return
        if current and op.seq < 0:  # sent under a session forgotten since
            if link is self.link and self.rng.random() < ANSWER_LOST:
                self._leave()  # the link ended before the answer came
                self.relink_at = self.sim.now() + self.rng.uniform(0.3, 1.5)
                return
            self._stale_answered(link, op, (P.OK, encode_result(result)), obs)
            return
        if result == UNKNOWN:  # refused: applied nowhere under this number
            if current:
                self._forgotten(link, op)
            return
        if current and link is self.link and self.rng.random() < ANSWER_LOST:
            # The link ended before the answer came: the op is unknown, and goes again
            # once the client linked again (its session idle meanwhile).
            self._leave()
            self.relink_at = self.sim.now() + self.rng.uniform(0.3, 1.5)
            return
        if not isinstance(result, OpError) or current:
            obs.outcome = OK
        if current:
            op.done = True
            self.s._ops.pop(op.seq, None)
            self.declared = self.declared or op is self.declaring

    def _forgotten(self, link: _SimLink, answered: _Op) -> None:
        s = self.s
        old = {op: (s.id, op.seq) for op in s._ops.values() if op.seq > 0}
        s._forgotten(cast(Link, link), answered)
        self.forgotten += 1
        self._ended_ops(link)
        for op in s._ops.values():
            if op not in old:
                continue  # awaiting its answer under an earlier forgotten session
            session, seq = old[op]
            if op.seq < 0:  # awaits its own answer on ``link``
                self.stale[op] = (session, seq)
                self.waited += 1
                continue
            # Kept: reported not applied, sent again.
            self.sent_again += 1
            self.ops.append(Observed(self.cid, link.node, session, seq, op.code, self._args(op),
                                     self.cluster.now(), outcome=FAILED,
                                     result="sent again under a new session"))

    def _stale_answered(self, link: _SimLink, op: _Op, answer: Answer,
                        obs: Observed | None = None) -> None:
        """``op``, sent under a session forgotten since, was answered (``None``: its link
        ended first): the real client's ``stale_answered`` says what it did."""
        self.s.stale_answered(cast(Link, link), op, answer)
        if obs is not None and any(done is op for done, _ in self.s.resolved):
            obs.outcome = OK
        self._ended_ops(link)

    def _ended_ops(self, link: _SimLink) -> None:
        """Note the ops the session failed or resolved: one failed as not applied is
        reported so under the number it was sent with (the checker fails the run if
        that ever applies)."""
        s = self.s
        for op, error in s.failed:
            sent_as = self.stale.pop(op, None)
            if op is self.declaring:
                self.declaring = None  # declared again
            if getattr(error, "applied", None) is not False:
                self.failed_forgotten += 1
                continue
            assert isinstance(error, P.SessionForgotten) and sent_as is not None, (op, error)
            self.stale_not_applied += 1
            session, seq = sent_as
            self.ops.append(Observed(self.cid, link.node, session, seq, op.code, self._args(op),
                                     self.cluster.now(), outcome=FAILED,
                                     result="refused under a forgotten session"))
        for op, _result in s.resolved:
            self.stale.pop(op, None)
            self.stale_applied += 1
            self.declared = self.declared or op is self.declaring
        s.failed, s.resolved = [], []

    def lost(self, obs: Observed) -> None:
        link = self.link
        if link is not None and link.open and link.node == obs.node:
            self._leave()

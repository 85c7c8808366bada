"""The replicated state: named queues, topics and work queues, sessions, leader time.

:meth:`StateMachine.apply` runs on every replica for every committed batch, in log
order, and is deterministic: it reads nothing but the batch, the leader's time stamp
and its own state. It never raises. Each successful transition is recorded as a typed
event (:mod:`.events`), released by :meth:`StateMachine.drain_events`.

Sessions make proposals idempotent: a retried op (same session and sequence number)
returns the result recorded the first time instead of applying again. A session not
seen for :data:`SESSION_TTL_MS` of leader time is forgotten at the first batch after
that, on every replica alike (sessions are kept in the order they were last seen, and
that order survives snapshots).
A member's session is the batch's; a client's op travels wrapped in ``CLIENT_OP``
under the client's own session (ids above :data:`CLIENT_SESSION_BASE`), so the client
can retry it through another member and it still applies at most once (the member may
propose several of one client's ops as one ``CLIENT_OPS``, each applied as its own
``CLIENT_OP`` would be). A client session keeps the results of at most
:data:`CLIENT_WINDOW` sequence numbers above its floor, and at most
:data:`MAX_CLIENT_SESSIONS` are kept: the client holding the most gives up its least
recently seen one (:mod:`.client_sessions`), so no client can push another's out.
Every session keeps a bounded amount of results in bytes, and all together too
(:mod:`.session_results`): a retry of an op whose result is no longer kept is answered
so, never applied again; a member's session keeps no copy of the results of the client
ops it proposed (a retry is answered by the client's session, or refused again when
that refused it, not held); a client's takes in the sized form never give up its
unanswered ones' results (:mod:`.take_bytes`). Sessions are part of the snapshot
(:mod:`.state_snapshot`).
An ephemeral subscription a client's op starts is owned by its session, and ends when
that session is dropped or goes unrefreshed for a grace (:mod:`.ephemeral_owners`).
A client closing cleanly ends its session with its last op; later ops under it are
refused (:mod:`.session_end`). A client session is registered by a replicated op, and
an op under a registered id the table does not hold is refused, never applied
(:mod:`.session_register`).

Every applied op on an object named in ``tap`` (``(kind, name)`` pairs) is also
reported as an :class:`~.events.OpApplied` event: a member serving clients forwards
them to the mirrors of the clients watching the object, which
:meth:`StateMachine.replay` them. The tap changes no state.

A ``TXN`` applies the ops it carries all or none (:mod:`.transactions`).

A push given a producer message id applies once while the id is in the bounded dedup
window (:mod:`.dedup`), whichever session or member proposes it again.

The op families it answers are listed in :data:`~.op_table.FAMILIES`.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from ..core.dedup import DedupWindow
from ..core.expiry import Expiry
from ..core.fifo import Fifo
from ..core.headers import OffsetHeaders
from ..core.topic import TopicCore
from ..raft.batch import CommandError, decode_command
from . import ephemeral_owners, session_end, session_popped, session_register
from .client_sessions import CLIENT_SESSION_BASE as CLIENT_SESSION_BASE
from .client_sessions import ClientSessions
from .dedup import DedupKey
from .events import Event, OpApplied
from .op_table import FAMILIES as FAMILIES
from .op_table import HANDLERS
from .ops import (
    CHECKED_GIVE_BACKS,
    CLIENT_OP,
    CLIENT_OPS,
    ONCE_OPS,
    SESSION_END,
    SESSION_REGISTER,
    TXN,
    OpError,
    OpRefused,
    family_of_op,
    op_name,
)
from .proposing import Proposing
from .receipts import ReceiptLedger
from .session_results import (
    IN_CLIENT,
    NOT_HELD,
    NOT_KEPT,
    SEQ_REUSED,
    KeptResults,
    Session,
    identity,
    limit_of,
)
from .state_snapshot import StateSnapshots
from .take_bytes import SIZED_TAKES, room_of
from .work_queues import WorkState

log = logging.getLogger(__name__)

_ENDING_OPS, _SUBSCRIBE_OPS = ephemeral_owners.ENDING_OPS, ephemeral_owners.SUBSCRIBE_OPS

SESSION_TTL_MS = 3_600_000
_WRAPPERS = (CLIENT_OP, CLIENT_OPS)
#: Ops counted and reported as the plain ops they apply.
_COUNTED_INSIDE = frozenset({CLIENT_OP, CLIENT_OPS, TXN, *ONCE_OPS})
#: Results a client session keeps above its floor; an op further ahead is refused.
CLIENT_WINDOW = 1024
#: Client sessions kept; opening one more drops the least recently seen session of the
#: client holding the most.
MAX_CLIENT_SESSIONS = 16384

_MALFORMED_CLIENT_OP = OpError("malformed_client_op", "a client op is [session, seq, floor, "
                               "code, *args] with a client session id and seq >= 1")
_DUPLICATE = OpError("duplicate", "already applied")

class StateMachine(StateSnapshots, Proposing):
    """Deterministic application of committed batches.

    The window of producer message ids starts at the default bounds; only a
    ``DEDUP_LIMITS`` op changes them (:mod:`.dedup`), so every replica agrees.
    """

    #: The room a sized take applying now is held to (:mod:`.take_bytes`), else ``None``.
    take_room: int | None = None

    def __init__(self, max_client_sessions: int | None = None) -> None:
        self.now = 0
        #: Client sessions kept at most, when not :data:`MAX_CLIENT_SESSIONS` (every
        #: replica of a cluster keeps the same bound).
        self.max_client_sessions = max_client_sessions
        self.dedup: DedupWindow[DedupKey] = DedupWindow()
        self.queues: dict[str, Fifo[Any]] = {}
        self.topics: dict[str, TopicCore[Any]] = {}
        #: Headers of topic elements published with some, by topic (:mod:`.headers`).
        self.topic_headers: dict[str, OffsetHeaders] = {}
        #: Headers of work items pushed with some, by work queue (:mod:`.headers`).
        self.work_headers: dict[str, OffsetHeaders] = {}
        self.work_queues: dict[str, WorkState] = {}
        #: The settlement order of all work queues' receipts, bounding them together
        #: (:mod:`.receipts`).
        self.receipt_ledger = ReceiptLedger()
        #: Consumer groups: topic -> {group: its work queue's name} (:mod:`.groups`).
        self.groups: dict[str, dict[str, str]] = {}
        #: Expiry rules and per-message deadlines by (kind, name) (:mod:`.expiry`).
        self.expiry: dict[tuple[str, str], Expiry] = {}
        self.addresses: dict[str, str] = {}
        self.member_pages: dict[str, str] = {}
        #: Oldest-seen first.
        self.sessions: OrderedDict[int, Session] = OrderedDict()
        #: How many client sessions each client holds (:mod:`.client_sessions`).
        self.client_counts = ClientSessions()
        #: While a member's retried client op is answered by the client's session: what
        #: the member's session kept for it (:data:`IN_CLIENT` or :data:`NOT_HELD`).
        self._again: OpError | None = None
        #: Whether the client op applied last was refused as a whole, its session not held.
        self._not_held = False
        #: Client sessions owning ephemeral subscriptions (:mod:`.ephemeral_owners`).
        self.ephemeral_owners = ephemeral_owners.EphemeralOwners()
        #: Client sessions ended lately (:mod:`.session_end`).
        self.ended = session_end.EndedSessions()
        #: What client sessions popped and did not give back (:mod:`.session_popped`;
        #: no result depends on it).
        self.popped = session_popped.SessionPopped()
        #: Sessions registered so far, and the key hiding their ids (:mod:`.session_register`).
        self.registrations = self.session_key = 0
        #: The bytes of results the sessions keep (:mod:`.session_results`).
        self.kept = KeptResults()
        self.events: list[Event] = []
        self.applied_batches = 0
        self.applied_ops = 0
        self.duplicate_ops = 0
        #: Report the ops applied to these objects as OpApplied events.
        self.tap: Collection[tuple[str, str]] = ()
        self.tapped = 0

    # -- applying -------------------------------------------------------------------------

    def apply(self, payload: bytes, stamp: int) -> list[Any] | OpError:
        """Apply one batch; returns one result per op (or the batch's error)."""
        if stamp > self.now:
            self.now = stamp
        self.applied_batches += 1
        try:
            session_id, floor, ops = decode_command(payload)
        except CommandError as exc:
            log.error("skipped a malformed committed command: %s", exc)
            return OpError("malformed_command", str(exc))
        sessions = self.sessions
        session = sessions.get(session_id)
        if session is None:
            if session_register.registered(session_id):
                return session_register.UNKNOWN
            session = (self.open_client_session(session_id)
                       if session_id > CLIENT_SESSION_BASE else Session())
            sessions[session_id] = session
        else:
            sessions.move_to_end(session_id)
            self.client_counts.seen(session_id)
        session.seen = self.now
        if (self.ended.ended  # else only the least recently seen session may have expired
                or next(iter(sessions.values())).seen < self.now - SESSION_TTL_MS):
            self._expire_sessions()
        results: list[Any] = []
        done = session.done
        for op in ops:
            seq, code = op[0], op[1]
            if seq in done or seq < session.floor:
                kept = done.get(seq, _DUPLICATE)
                if kept == IN_CLIENT or kept == NOT_HELD:  # answered by its session
                    self._again = IN_CLIENT if kept == IN_CLIENT else NOT_HELD
                    try:
                        kept = self._apply_plain(code, op[2:])
                    finally:
                        self._again = None
                else:
                    self.duplicate_ops += 1
                results.append(kept)
                continue
            result = self._apply_plain(code, op[2:])
            if code in _SUBSCRIBE_OPS and self.ephemeral_owners.owner:
                ephemeral_owners.subscribed(self, None, code, op[2:], result)
            if code in _WRAPPERS:
                session.keep(seq, NOT_HELD if self._not_held else IN_CLIENT)
            elif result is None:  # what most ops answer: nothing to count (KeptResults.keep)
                session.keep(seq, None)
            else:
                self.kept.keep(sessions, session, seq, result, limit_of(session_id))
            results.append(result)
        if floor > session.floor:
            self.kept.freed(session.move_floor(floor))
        return results

    def apply_plain(self, code: Any, args: list[Any]) -> Any:
        """Apply one op (``code``, ``args``) outside any session; returns its result."""
        return self._apply_plain(code, args)

    def _apply_plain(self, code: Any, args: list[Any]) -> Any:
        fn = HANDLERS.get(code)
        if fn is None:
            return OpError("unknown_op", f"op code {code} is not known to this node's version")
        wrapper = code in _COUNTED_INSIDE
        if not wrapper:
            self.applied_ops += 1
        try:
            return fn(self, args)
        except OpRefused as exc:
            return exc.error
        except Exception as exc:  # deterministic on every replica; never wedges apply
            log.exception("op %s failed while applying", op_name(code))
            return OpError("apply_failed", f"{type(exc).__name__}: {exc}")
        finally:
            tap = self.tap
            if (tap and not wrapper and args and type(args[0]) is str
                    and (family_of_op(code, args), args[0]) in tap):
                self.tapped += 1
                self.events.append(OpApplied(self.tapped, self.now, [code, *args]))
            if code in _ENDING_OPS:
                ephemeral_owners.ended(self, code, args)

    def apply_client(self, args: list[Any]) -> Any:
        """The ``CLIENT_OP`` handler: ``[session, seq, floor, code, *args]`` applies the
        op once per client session (module docstring)."""
        self._not_held = False
        if len(args) < 4 or type(args[0]) is not int or type(args[2]) is not int:
            return _MALFORMED_CLIENT_OP
        return self._apply_in_session(args[0], args[2], [args[1:2] + args[3:]])[0]

    def apply_client_ops(self, args: list[Any]) -> Any:
        """The ``CLIENT_OPS`` handler: ``[session, floor, [seq, code, *args], ...]``
        applies each op as ``CLIENT_OP`` would, in order; one result per op."""
        self._not_held = False
        if (len(args) < 3 or type(args[0]) is not int or type(args[1]) is not int
                or not all(type(op) is list and len(op) >= 2 for op in args[2:])):
            return OpError("malformed_client_ops", "client ops are [session, floor, [seq, "
                           "code, *args], ...]")
        return self._apply_in_session(args[0], args[1], args[2:])

    def _apply_in_session(self, sid: int, floor: int, ops: list[list[Any]]) -> list[Any]:
        """Each ``[seq, code, *args]`` of ``ops`` once in client session ``sid``: a seq
        applied before (or below the floor) answers its kept result; the session is
        looked up (or opened) at its first well-formed op, and moves to ``floor`` at its
        first op not applied before; ``-floor`` in the sized form (:mod:`.take_bytes`)."""
        sized, floor = floor < 0, abs(floor)
        results: list[Any] = []
        session: Session | None = None
        looked = False
        for op in ops:
            seq, code = op[0], op[1]
            if (type(seq) is not int or type(code) is not int or sid <= CLIENT_SESSION_BASE
                    or seq < 1 or code in _WRAPPERS):
                results.append(_MALFORMED_CLIENT_OP)
                continue
            if session is None:
                session = None if self._again is NOT_HELD else self.sessions.get(sid)
                if session is None:
                    found = self._not_held_session(sid, code)
                    if type(found) is not Session:
                        self._not_held = self._not_held or not looked  # refused as a whole
                        looked = True
                        results.append(found)
                        continue
                    session = found
                else:
                    self.sessions.move_to_end(sid)
                    self.client_counts.seen(sid)
                looked = True
                session.seen = self.now
            done = session.done
            if seq in done or seq < session.floor:
                self.duplicate_ops += 1
                kept = session.ops.get(seq) if seq in done else None
                results.append(SEQ_REUSED if kept is not None and kept != identity(op)
                               else done.get(seq, _DUPLICATE))
                continue
            if floor > session.floor:
                self.kept.freed(session.move_floor(floor))
            if seq >= session.floor + CLIENT_WINDOW:
                results.append(OpError(
                    "session_window", f"op {seq} is more than {CLIENT_WINDOW} ahead of its "
                    f"session's floor {session.floor}; it was not applied"))
                continue
            if code == SESSION_REGISTER:
                results.append(session_register.IN_SESSION)
                continue
            if code == SESSION_END:
                self._drop_client(sid)
                self.ended.add(sid, self.now)
                session = None
                results.append(None)
                continue
            self.take_room = room_of(session) if sized and code in SIZED_TAKES else None
            result = (self._apply_plain(code, op[2:]) if code not in CHECKED_GIVE_BACKS
                      else session_popped.give_back(self, sid, code, op[2:]))
            self.take_room = None
            if code in _SUBSCRIBE_OPS:
                ephemeral_owners.subscribed(self, sid, code, op[2:], result)
            self.kept.keep(self.sessions, session, seq, result)
            if code in session_popped.FOLLOWED:
                self.popped.applied(sid, seq, code, op[2:], result, session.sizes.get(seq))
            if type(result) is list:  # what a pop answers: the op it was is kept too
                session.keep_op(seq, identity(op))
            results.append(result)
        return results

    def _not_held_session(self, sid: int, code: int) -> Session | Any:
        """Client session ``sid``, not held, opened at its first op (unless registered),
        or the answer refusing op ``code`` under it; a member's retry of an op refused
        before (:data:`NOT_HELD`) is refused again, one applied before never applied
        twice."""
        again = self._again
        registered = session_register.registered(sid)
        if sid in self.ended or (again is NOT_HELD and not registered):
            return None if code == SESSION_END else session_end.ENDED  # as the first was
        if again is IN_CLIENT:  # its session was dropped since: never applied twice
            return NOT_KEPT
        if registered:  # forgotten: never opened by an op
            return session_register.UNKNOWN
        return self.open_client_session(sid)

    def open_client_session(self, sid: int) -> Session:
        """A new client session, seen now; at the bound, the least recently seen session
        of the client holding the most is dropped (:mod:`.client_sessions`)."""
        clients = self.client_counts
        if clients.total >= (self.max_client_sessions or MAX_CLIENT_SESSIONS):
            self._drop_client(clients.victim(self.sessions))
        session = self.sessions[sid] = Session(seen=self.now)
        clients.opened(sid)
        return session

    def replay(self, now: int, op: list[Any]) -> Any:
        """Apply ``op`` (``[code, *args]``), which another replica applied at leader time
        ``now`` (a client's mirror of a member's objects); returns its result."""
        if now > self.now:
            self.now = now
        return self._apply_plain(op[0], op[1:])

    def _expire_sessions(self) -> None:
        horizon = self.now - SESSION_TTL_MS
        if self.ended:
            self.ended.expire(horizon)
        while self.sessions:
            sid, oldest = next(iter(self.sessions.items()))
            if oldest.seen >= horizon:
                return
            if sid > CLIENT_SESSION_BASE:
                self._drop_client(sid)
            else:
                del self.sessions[sid]
                self.kept.freed(oldest.kept_bytes)

    def _drop_client(self, sid: int) -> None:
        """Forget client session ``sid``, ending the ephemeral subscriptions it owns."""
        self.kept.freed(self.sessions.pop(sid).kept_bytes)
        self.client_counts.dropped(sid)
        self.popped.dropped(sid)
        ephemeral_owners.drop_session(self, sid)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def drain_events(self) -> list[Event]:
        events, self.events = self.events, []
        return events

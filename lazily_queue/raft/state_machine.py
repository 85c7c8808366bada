"""The replicated state: named queues (and topics, work queues), sessions, leader time.

:meth:`StateMachine.apply` runs on every replica for every committed batch, in log
order, and is deterministic: it reads nothing but the batch, the leader's time stamp
and its own state. It never raises. Each successful transition is appended to
:attr:`StateMachine.events` as ``(kind, name, data)`` for the node's reactive shells.

Sessions make proposals idempotent: a retried op (same session and sequence number)
returns the result recorded the first time instead of applying again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.fifo import VecDequeStorage
from ..core.queue import CLOSE, POP, PUSH, UNPOP, QueuePopError, QueuePushError
from . import commands as C
from .commands import CommandError, OpError

if TYPE_CHECKING:
    from ..core.topic import TopicCore
    from .state_collections import WorkState

log = logging.getLogger(__name__)

SESSION_TTL_MS = 3_600_000
SNAPSHOT_FORMAT = 1

Event = tuple[str, str, Any]
Handler = Callable[["StateMachine", list[Any]], Any]

_HANDLERS: dict[int, Handler] = {}
_SECTIONS: list[Section] = []


@dataclass
class Session:
    floor: int = 0
    done: dict[int, Any] = field(default_factory=dict)
    seen: int = 0


@dataclass(frozen=True)
class Section:
    """A named part of the snapshot, contributed by a family of operations."""

    name: str
    capture: Callable[[StateMachine], Any]
    restore: Callable[[StateMachine, Any], None]


def handler(code: int) -> Callable[[Handler], Handler]:
    """Register the apply function of an op code."""

    def register(fn: Handler) -> Handler:
        if code in _HANDLERS:
            raise ValueError(f"op code {code} registered twice")
        _HANDLERS[code] = fn
        return fn

    return register


def section(name: str, capture: Callable[[StateMachine], Any],
            restore: Callable[[StateMachine, Any], None]) -> None:
    """Register a snapshot section."""
    _SECTIONS.append(Section(name, capture, restore))


class StateMachine:
    """Deterministic application of committed batches."""

    def __init__(self) -> None:
        self.now = 0
        self.queues: dict[str, VecDequeStorage[Any]] = {}
        self.topics: dict[str, TopicCore[Any]] = {}
        self.work_queues: dict[str, WorkState] = {}
        self.addresses: dict[str, str] = {}
        self.sessions: dict[int, Session] = {}
        self.events: list[Event] = []
        self.applied_batches = 0
        self.applied_ops = 0
        self.duplicate_ops = 0

    # -- applying -------------------------------------------------------------------------

    def apply(self, payload: bytes, stamp: int) -> list[Any] | OpError:
        """Apply one batch; returns one result per op (or the batch's error)."""
        if stamp > self.now:
            self.now = stamp
        self.applied_batches += 1
        try:
            session_id, floor, ops = C.decode_command(payload)
        except CommandError as exc:
            log.error("skipped a malformed committed command: %s", exc)
            return OpError("malformed_command", str(exc))
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = Session()
        session.seen = self.now
        results: list[Any] = []
        for op in ops:
            seq = op[0]
            if seq in session.done or seq < session.floor:
                self.duplicate_ops += 1
                results.append(session.done.get(seq, OpError("duplicate", "already applied")))
                continue
            result = self._apply_op(op)
            session.done[seq] = result
            results.append(result)
        if floor > session.floor:
            session.floor = floor
            for seq in [s for s in session.done if s < floor]:
                del session.done[seq]
        if self.applied_batches % 1024 == 0:
            self._expire_sessions()
        return results

    def _apply_op(self, op: list[Any]) -> Any:
        code = op[1]
        fn = _HANDLERS.get(code)
        if fn is None:
            return OpError("unknown_op", f"op code {code} is not known to this node's version")
        self.applied_ops += 1
        try:
            return fn(self, op[2:])
        except OpErrorRaised as exc:
            return exc.error
        except Exception as exc:  # deterministic on every replica; never wedges apply
            log.exception("op %s failed while applying", C.OP_NAMES.get(code, code))
            return OpError("apply_failed", f"{type(exc).__name__}: {exc}")

    def _expire_sessions(self) -> None:
        horizon = self.now - SESSION_TTL_MS
        for sid in [sid for sid, s in self.sessions.items() if s.seen < horizon]:
            del self.sessions[sid]

    def emit(self, kind: str, name: str, data: Any) -> None:
        self.events.append((kind, name, data))

    def drain_events(self) -> list[Event]:
        events, self.events = self.events, []
        return events

    # -- snapshots ------------------------------------------------------------------------

    def capture(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT,
            "now": self.now,
            "queues": {
                name: [q.capacity(), q.is_closed(), q.elements()] for name, q in self.queues.items()
            },
            "addresses": dict(self.addresses),
            "sessions": {
                str(sid): [s.floor, s.seen, [[seq, _encode_result(r)] for seq, r in s.done.items()]]
                for sid, s in self.sessions.items()
            },
        }
        for sec in _SECTIONS:
            doc[sec.name] = sec.capture(self)
        return doc

    @classmethod
    def validate(cls, doc: Any) -> None:
        """Raise ``ValueError`` unless ``doc`` restores cleanly."""
        cls().restore(doc)

    def restore(self, doc: Any) -> None:
        if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
            raise ValueError("unknown state machine snapshot format")
        queues: dict[str, VecDequeStorage[Any]] = {}
        for name, (capacity, closed, elements) in doc["queues"].items():
            q: VecDequeStorage[Any] = VecDequeStorage(capacity, elements)
            if closed:
                q.close()
            queues[str(name)] = q
        sessions: dict[int, Session] = {}
        for sid, (floor, seen, done) in doc["sessions"].items():
            sessions[int(sid)] = Session(
                int(floor), {int(seq): _decode_result(r) for seq, r in done}, int(seen)
            )
        self.now = int(doc["now"])
        self.queues = queues
        self.addresses = {str(k): str(v) for k, v in doc["addresses"].items()}
        self.sessions = sessions
        for sec in _SECTIONS:
            sec.restore(self, doc.get(sec.name))
        self.events.append(("restored", "", None))


class OpErrorRaised(Exception):
    """Raised inside a handler to refuse an op with an :class:`OpError`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error = OpError(code, message)


def _encode_result(result: Any) -> list[Any]:
    if isinstance(result, QueuePushError):
        return [1, result.value]
    if isinstance(result, QueuePopError):
        return [2, result.value]
    if isinstance(result, OpError):
        return [3, result.code, result.message]
    return [0, result]


def _decode_result(doc: list[Any]) -> Any:
    tag = doc[0]
    if tag == 1:
        return QueuePushError(doc[1])
    if tag == 2:
        return QueuePopError(doc[1])
    if tag == 3:
        return OpError(doc[1], doc[2])
    return doc[1]


# -- queue operations -----------------------------------------------------------------------


def _queue(sm: StateMachine, name: Any) -> VecDequeStorage[Any]:
    q = sm.queues.get(name) if isinstance(name, str) else None
    if q is None:
        raise OpErrorRaised("unknown_queue", f"queue {name!r} has not been declared")
    return q


@handler(C.QUEUE_DECLARE)
def _queue_declare(sm: StateMachine, args: list[Any]) -> Any:
    name, capacity = args
    if not isinstance(name, str) or not name:
        raise OpErrorRaised("bad_name", f"queue name must be a non-empty string, got {name!r}")
    existing = sm.queues.get(name)
    if existing is not None:
        if existing.capacity() != capacity:
            raise OpErrorRaised(
                "capacity_mismatch",
                f"queue {name!r} exists with capacity {existing.capacity()}, "
                f"not {capacity}; use the same capacity on every node",
            )
        return None
    try:
        sm.queues[name] = VecDequeStorage(capacity)
    except ValueError as exc:
        raise OpErrorRaised("bad_capacity", str(exc)) from exc
    sm.emit("queue_declared", name, capacity)
    return None


@handler(C.QUEUE_PUSH)
def _queue_push(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    err = q.try_push(args[1])
    if err is None:
        sm.emit("queue", args[0], (PUSH, pre))
    return err


@handler(C.QUEUE_POP)
def _queue_pop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    result = q.try_pop()
    if not isinstance(result, QueuePopError):
        sm.emit("queue", args[0], (POP, pre))
    return result


@handler(C.QUEUE_UNPOP)
def _queue_unpop(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    pre = q.len()
    q._items.appendleft(args[1])
    sm.emit("queue", args[0], (UNPOP, pre))
    return None


@handler(C.QUEUE_CLOSE)
def _queue_close(sm: StateMachine, args: list[Any]) -> Any:
    q = _queue(sm, args[0])
    if not q.is_closed():
        q.close()
        sm.emit("queue", args[0], (CLOSE, q.len()))
    return None


@handler(C.BARRIER)
def _barrier(sm: StateMachine, args: list[Any]) -> Any:
    return sm.now


@handler(C.MEMBER_ADDRESS)
def _member_address(sm: StateMachine, args: list[Any]) -> Any:
    node_id, address = args
    sm.addresses[str(node_id)] = str(address)
    sm.emit("address", str(node_id), str(address))
    return None


# Topic and work-queue operations register themselves.
from . import state_collections as _state_collections  # noqa: E402,F401

"""The committed history, recorded from every replica as it applies entries.

:class:`RecordingStateMachine` is the real state machine with one addition: every
batch it applies is reported to the shared :class:`History` with its log index. The
history keeps the first application of each index and checks every later one (on
another node, or on the same node after a restart) against it, so two replicas that
apply different commands at one index are caught at that moment. It also keeps, per
operation, the result of its first application, keyed by ``(session, seq)``: a
client's op (``CLIENT_OP``) under the client's session and number, not the batch's.
Each client op whose inner op really ran is noted with its index; one that ran at two
indexes was applied twice (a retry the state machine failed to recognise).

An op whose first appearance in the log is answered ``duplicate`` was not applied
there: it is a stale attempt its session's floor had passed (its proposer gave it up,
its outcome unknown, and numbered on). Likewise one answered ``session_ended`` or
``session_unknown``: the state machine refused it, its session ended or forgotten,
and applied nothing (that a refused ``CLIENT_OP`` ran nothing is checked as it
applies). Such an appearance
is *fenced*: kept apart in :attr:`History.fenced`, out of :attr:`History.results` and
:meth:`History.in_order`, so the op counts as applied only where it really was (a
later appearance, if any) and no model takes it for one that might have applied.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from lazily_queue.raft.batch import CommandError, decode_command
from lazily_queue.replicated.ops import (
    CHECKED_GIVE_BACKS,
    CLIENT_OP,
    CLIENT_OPS,
    EPHEMERAL_REAP,
    OpError,
    op_name,
)
from lazily_queue.replicated.state_machine import StateMachine


class Violation(AssertionError):
    """A checked property does not hold."""


@dataclass
class AppliedOp:
    index: int
    session: int
    seq: int
    code: int
    args: list[Any]
    result: Any
    stamp: int

    def expect(self, expected: Any) -> None:
        """Raise :class:`Violation` unless the op returned ``expected`` (the model's)."""
        if self.result != expected:
            raise Violation(f"index {self.index}: {op_name(self.code)} {self.args!r:.80} "
                            f"returned {self.result!r:.120}, the model says {expected!r:.120}")


@dataclass
class History:
    """Everything applied anywhere: per log index the batch digest, per op its result."""

    digests: dict[int, str] = field(default_factory=dict)
    ops: dict[int, list[AppliedOp]] = field(default_factory=dict)
    results: dict[tuple[int, int], AppliedOp] = field(default_factory=dict)
    applied: int = 0
    violation: str | None = None
    #: Per client op ``(session, seq)`` whose inner op ran: the index it ran at.
    client_runs: dict[tuple[int, int], int] = field(default_factory=dict)
    client_ops: int = 0
    #: The bound on client sessions the replicas keep, when not the default.
    max_client_sessions: int | None = None
    #: Per op first seen answered ``duplicate`` (never applied before): that appearance.
    fenced: dict[tuple[int, int], AppliedOp] = field(default_factory=dict)
    #: Per index holding checked give-backs (a consume-only client's): their answers at
    #: the first application, which every later one must give.
    checked: dict[int, list[Any]] = field(default_factory=dict)

    def record(self, node: str, index: int, payload: bytes, stamp: int,
               results: Any, ran: tuple[tuple[int, int], ...] = (),
               refused_ops: tuple[tuple[int, int], ...] = ()) -> None:
        """Note the batch applied at ``index``; ``ran``: the client ops whose inner op
        ran, ``refused_ops``: the client ops answered as refused under an ended or
        forgotten session."""
        self.applied += 1
        digest = hashlib.blake2b(payload, digest_size=12).hexdigest()
        known = self.digests.get(index)
        if known is not None:
            if known != digest:
                self.fail(
                    f"state machine safety: node {node} applied a different command at index "
                    f"{index} than was applied before ({digest} != {known})"
                )
            answers = self.checked.get(index)
            if answers is not None and _checked(index, payload, results, stamp) != answers:
                self.fail(f"replicas disagree on the checked give-backs of index {index}: "
                          f"{node} answered {_checked(index, payload, results, stamp)!r:.200}, "
                          f"the first {answers!r:.200}")
            return
        self.digests[index] = digest
        for k, key in enumerate(ran):
            first = self.client_runs.setdefault(key, index)
            if first != index or key in ran[:k]:
                self.fail(f"client op {key[0]:x}/{key[1]} was applied twice: at index "
                          f"{first} and again at {index} (a retry not deduplicated)")
        wrongly = [key for key in refused_ops if key in ran]
        if wrongly:
            self.fail(f"client op {wrongly[0][0]:x}/{wrongly[0][1]} ran at index {index} "
                      "though it was answered as refused under an ended or forgotten "
                      "session (not applied)")
        try:
            session, _, ops = decode_command(payload)
        except CommandError:
            return
        if not isinstance(results, list) or len(results) != len(ops):
            return
        entry: list[AppliedOp] = []
        checked: list[Any] = []
        for op, result in zip(ops, results, strict=True):
            for applied in _unwrapped(index, session, op, result, stamp):
                if applied.code in CHECKED_GIVE_BACKS:
                    checked.append((applied.session, applied.seq, applied.result))
                self.client_ops += applied.session != session
                key = (applied.session, applied.seq)
                if key not in self.results and _not_applied(applied.result):
                    self.fenced.setdefault(key, applied)
                    continue
                entry.append(applied)
                self.results.setdefault(key, applied)
        self.ops[index] = entry
        if checked:
            self.checked[index] = checked

    def fail(self, message: str) -> NoReturn:
        # Kept as well as raised: the engine swallows exceptions from apply.
        if self.violation is None:
            self.violation = message
        raise Violation(message)

    def check(self) -> None:
        """Raise the first violation seen while applying, if any."""
        if self.violation is not None:
            raise Violation(self.violation)

    def in_order(self) -> list[AppliedOp]:
        """Every first application of every op, in log order (duplicates of an applied op
        included, fenced appearances not)."""
        out: list[AppliedOp] = []
        for index in sorted(self.ops):
            out.extend(self.ops[index])
        return out


#: The answers of the state machine to an op it did not apply: "already applied" (at a
#: first appearance: fenced off by its session's floor), its session ended, or forgotten.
NOT_APPLIED = frozenset({"duplicate", "session_ended", "session_unknown"})
#: Of those, the refusals of an op under a session the state machine does not hold.
REFUSED = frozenset({"session_ended", "session_unknown"})


def _checked(index: int, payload: bytes, results: Any, stamp: int) -> list[Any]:
    """The answers to the checked give-backs of the entry ``payload`` at ``index``."""
    try:
        session, _, ops = decode_command(payload)
    except CommandError:
        return []
    if not isinstance(results, list) or len(results) != len(ops):
        return []
    return [(a.session, a.seq, a.result) for op, result in zip(ops, results, strict=True)
            for a in _unwrapped(index, session, op, result, stamp)
            if a.code in CHECKED_GIVE_BACKS]


def _not_applied(result: Any) -> bool:
    """Whether ``result`` says the state machine applied nothing for the op."""
    return isinstance(result, OpError) and result.code in NOT_APPLIED


def refused(result: Any) -> bool:
    """Whether ``result`` refuses an op under an ended or forgotten session."""
    return isinstance(result, OpError) and result.code in REFUSED


def _unwrapped(index: int, session: int, op: list[Any], result: Any, stamp: int
               ) -> list[AppliedOp]:
    """``op`` as the ops it applied: a client's (``CLIENT_OP``) under the client's session
    and number, each of a ``CLIENT_OPS`` group likewise, any other under the batch's."""
    code, args = op[1], op[2:]
    if code == CLIENT_OP and len(args) >= 4 and all(type(v) is int for v in args[:4]):
        return [AppliedOp(index, args[0], args[1], args[3], args[4:], result, stamp)]
    if (code == CLIENT_OPS and len(args) >= 3 and type(args[0]) is int
            and isinstance(result, list) and len(result) == len(args) - 2
            and all(type(o) is list and len(o) >= 2 for o in args[2:])):
        return [AppliedOp(index, args[0], o[0], o[1], o[2:], r, stamp)
                for o, r in zip(args[2:], result, strict=True)]
    return [AppliedOp(index, session, op[0], code, args, result, stamp)]


class RecordingStateMachine(StateMachine):
    """The replicated state machine, reporting each applied batch to a :class:`History`."""

    def __init__(self, node: str, history: History) -> None:
        super().__init__()
        self.node = node
        self.history = history
        self.index_source: Callable[[], int] = lambda: 0
        self._ran: list[tuple[int, int]] = []
        self._refused: list[tuple[int, int]] = []
        self._inner_ran = False

    def apply(self, payload: bytes, stamp: int) -> Any:
        before = self.now
        self._ran = []
        self._refused = []
        result = super().apply(payload, stamp)
        if self.now < before:
            self.history.fail(f"node {self.node}: replicated time went back from {before}")
        self.history.record(self.node, self.index_source(), payload, stamp, result,
                            tuple(self._ran), tuple(self._refused))
        return result

    def apply_client(self, args: list[Any]) -> Any:
        self._inner_ran = False
        result = super().apply_client(args)
        if self._inner_ran:
            self._ran.append((args[0], args[1]))
        if refused(result):
            self._refused.append((args[0], args[1]))
        return result

    def _apply_plain(self, code: Any, args: list[Any]) -> Any:
        if code != CLIENT_OP:
            self._inner_ran = True
        if code != EPHEMERAL_REAP or len(args) != 1 or type(args[0]) is not int:
            return super()._apply_plain(code, args)
        before = self.capture()
        stale = [row[0] for row in before.get("ephemeral_owners") or []
                 if row[1] < self.now - args[0]]
        result = super()._apply_plain(code, args)
        self._checked(check_drop, before, stale, False)
        return result

    def open_client_session(self, sid: int) -> Any:
        self.max_client_sessions = self.history.max_client_sessions
        return super().open_client_session(sid)

    def _drop_client(self, sid: int) -> None:
        self._inner_ran = True  # a session's end runs no inner op but drops it
        before = self.capture()
        super()._drop_client(sid)
        self._checked(check_drop, before, [sid], True)

    def _checked(self, check: Callable[[dict[str, Any], dict[str, Any], list[int], bool],
                                       None],
                 before: dict[str, Any], sids: list[int], dropped: bool) -> None:
        try:
            check(before, self.capture(), sids, dropped)
        except Violation as exc:
            self.history.fail(f"node {self.node}: {exc}")


def check_drop(before: dict[str, Any], after: dict[str, Any], sids: list[int],
               dropped: bool) -> None:
    """Raise unless state ``after`` is ``before`` less the ephemeral subscriptions of
    sessions ``sids`` and their ownership (and, ``dropped``, their table entries)."""
    expected = copy.deepcopy(before)
    rows = before.get("ephemeral_owners") or []
    for _, _, keys in (row for row in rows if row[0] in sids):
        for topic, subscriber in keys:
            expected["topics"][topic]["subscriptions"].pop(subscriber, None)
    kept = [row for row in rows if row[0] not in sids]
    expected.pop("ephemeral_owners", None)
    if kept:
        expected["ephemeral_owners"] = kept
    if dropped:
        for sid in sids:
            expected["sessions"].pop(str(sid), None)
    for name in sorted(set(expected) | set(after)):
        if expected.get(name) != after.get(name):
            raise Violation(f"dropping sessions {[f'{s:x}' for s in sids]} changed {name!r} "
                            f"beyond their ephemeral subscriptions: {after.get(name)!r:.200}, "
                            f"expected {expected.get(name)!r:.200}")

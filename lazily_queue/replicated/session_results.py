"""Session: what the state machine keeps of one proposer's session, so that an op
retried under its sequence number is applied once and answered with its kept result.

The kept results are bounded in bytes as estimated by
:func:`~.results.result_size` (from the results' shape, so alike on every replica and
after a snapshot): a client's session keeps at most :data:`SESSION_KEPT_BYTES`, a
member's :data:`MEMBER_KEPT_BYTES`, all sessions together at most :data:`KEPT_BYTES`
(:class:`KeptResults`). The results of the client ops a member proposes (``CLIENT_OP``,
``CLIENT_OPS``) are kept once, by the client's session: the member's keeps
:data:`IN_CLIENT` for them, and a retry of one is answered by the client's session.
A result not kept, or given up for room, leaves :data:`NOT_KEPT` in its place: a retry
of its op is answered that it was applied and its result is no longer kept, never
applied again. A client op the client's session refused as a whole (the session not
held: ended or forgotten) leaves :data:`NOT_HELD` in the member's session: a retry of
it is refused again, never answered as applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .client_sessions import CLIENT_SESSION_BASE, owner_of
from .ops import OpError
from .results import result_size

#: Bytes of results one session keeps at most: a larger result is not kept, and the
#: oldest kept ones are given up to make room for a new one (a claim of one message of
#: the largest size a cluster may allow, 4 MiB, is kept).
SESSION_KEPT_BYTES = 8 * 1024 * 1024
#: Bytes of results a member's session keeps at most: what its own unanswered ops popped
#: or claimed, which no window bounds but its callers (64 pops of a 1 MiB message, or 16
#: of the largest 4 MiB, in flight over a leader change are all answered).
MEMBER_KEPT_BYTES = 64 * 1024 * 1024
#: Bytes of results all sessions keep together at most: past it, the owners keeping the
#: most (a client's sessions together, a member's session alone) give up their oldest
#: results until all keep :data:`KEPT_BYTES_AFTER_SHED`.
KEPT_BYTES = 128 * 1024 * 1024
KEPT_BYTES_AFTER_SHED = KEPT_BYTES * 3 // 4

#: What a session keeps for an applied op whose result it does not keep.
NOT_KEPT = OpError("duplicate", "already applied; its result is no longer kept (a session "
                   f"keeps at most {SESSION_KEPT_BYTES >> 20} MiB of results and all "
                   f"sessions {KEPT_BYTES >> 20} MiB; a larger result is not kept and the "
                   "oldest give way): read the object's state to learn what it did")


#: What a member's session keeps for a client op it proposed (the client's session keeps
#: its result and answers a retry).
IN_CLIENT = OpError("in_client_session", "a client's ops: their results are kept by the "
                    "client's session")

#: What a member's session keeps for a client op (or ops) its client's session refused as
#: a whole, not held (ended or forgotten): a retry is refused again, whatever the session
#: tables hold by then.
NOT_HELD = OpError("client_session_not_held", "a client's ops refused: their session was "
                   "not held")


def kept_size(result: Any, limit: int = SESSION_KEPT_BYTES) -> int:
    """The bytes ``result`` counts for when kept (over ``limit``: too large to keep;
    ``None``, :data:`NOT_KEPT`, :data:`IN_CLIENT` and :data:`NOT_HELD`, shared by all,
    count nothing)."""
    if result is None or (type(result) is OpError and (
            result == NOT_KEPT or result == IN_CLIENT or result == NOT_HELD)):
        return 0
    return result_size(result, limit)


def limit_of(sid: int) -> int:
    """The bytes of results session ``sid`` keeps at most (a client's or a member's)."""
    return SESSION_KEPT_BYTES if sid > CLIENT_SESSION_BASE else MEMBER_KEPT_BYTES


@dataclass
class Session:
    floor: int = 0
    done: dict[int, Any] = field(default_factory=dict)
    seen: int = 0
    #: No seq in ``done`` is below this.
    low: int = 0
    #: What each client op kept in ``done`` with a list for result (a pop's, say) was:
    #: ``(code, first argument)``, read only for a seq in ``done`` (entries of forgotten
    #: seqs go in batches, see :meth:`keep_op`). Only what this replica applied itself
    #: (not in snapshots): a seq applied again as another op is refused rather than
    #: answered with the first op's result, which a member would take as its own.
    ops: dict[int, tuple[int, Any]] = field(default_factory=dict, compare=False, repr=False)
    #: The :func:`kept_size` of each result in ``done`` that counts, oldest kept first.
    sizes: dict[int, int] = field(default_factory=dict, compare=False, repr=False)
    #: The sum of ``sizes``.
    kept_bytes: int = field(default=0, compare=False)

    def keep(self, seq: int, result: Any, size: int = 0) -> None:
        """Keep ``result`` for ``seq``, counting ``size`` bytes (see :class:`KeptResults`)."""
        self.done[seq] = result
        if size:
            self.sizes[seq] = size
            self.kept_bytes += size
        if seq < self.low:
            self.low = seq

    def keep_op(self, seq: int, op: tuple[int, Any]) -> None:
        """Note what the op kept under ``seq`` was (after :meth:`keep`)."""
        ops = self.ops
        ops[seq] = op
        if len(ops) > 2 * len(self.done) + 64:
            done = self.done
            self.ops = {s: o for s, o in ops.items() if s in done}

    def give_up(self, at_least: int) -> int:
        """Replace the oldest kept results by :data:`NOT_KEPT` until ``at_least`` bytes
        are freed (or none is left); returns the bytes freed."""
        sizes, done = self.sizes, self.done
        freed = 0
        gone: list[int] = []
        for seq, size in sizes.items():
            if freed >= at_least:
                break
            gone.append(seq)
            freed += size
        for seq in gone:
            del sizes[seq]
            done[seq] = NOT_KEPT
        self.kept_bytes -= freed
        return freed

    def move_floor(self, floor: int) -> int:
        """Raise the floor to ``floor``, forgetting every kept result below it (by the
        seqs between ``low`` and it when they are fewer than those kept); returns the
        kept bytes freed."""
        self.floor = floor
        done, sizes = self.done, self.sizes
        freed = 0
        if floor - self.low < len(done):
            for seq in range(self.low, floor):
                done.pop(seq, None)
                if sizes:
                    freed += sizes.pop(seq, 0)
        else:
            for seq in [s for s in done if s < floor]:
                del done[seq]
                freed += sizes.pop(seq, 0)
        self.low = floor
        self.kept_bytes -= freed
        return freed


class KeptResults:
    """The bytes of results all sessions keep, held within the bounds (module docstring).

    Every replica makes the same choices: sizes come from the results' values, a session
    gives up its results oldest kept first, and the owner keeping the most gives up
    theirs first, its sessions keeping the most first (ties: the least recently seen
    first). An owner is a client, all the sessions its id tag names together (so one
    spreading its results over many sessions gives them up before another's), or a
    member's session."""

    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0

    def keep(self, sessions: Mapping[int, Session], session: Session, seq: int,
             result: Any, limit: int = SESSION_KEPT_BYTES) -> None:
        """Keep ``result`` for ``seq`` in ``session`` (one of ``sessions``, by id, oldest
        seen first, keeping at most ``limit`` bytes), or :data:`NOT_KEPT` when it is too
        large."""
        if result is None:  # what most ops answer: nothing to count
            session.keep(seq, None)
            return
        size = kept_size(result, limit)
        if size > limit:
            session.keep(seq, NOT_KEPT)
            return
        session.keep(seq, result, size)
        self.total += size
        over = session.kept_bytes - limit
        if over > 0:
            self.total -= session.give_up(over)
        if self.total > KEPT_BYTES:
            self.shed(sessions)

    def freed(self, size: int) -> None:
        """``size`` kept bytes were forgotten (a floor moved, a session dropped)."""
        self.total -= size

    def shed(self, sessions: Mapping[int, Session]) -> None:
        """Give up results, the owners keeping the most first (class docstring), down to
        :data:`KEPT_BYTES_AFTER_SHED` in all."""
        owners: dict[int, list[Session]] = {}
        kept: dict[int, int] = {}
        for sid, session in sessions.items():
            if session.kept_bytes:
                owner = owner_of(sid) if sid > CLIENT_SESSION_BASE else -1 - sid
                owners.setdefault(owner, []).append(session)
                kept[owner] = kept.get(owner, 0) + session.kept_bytes
        for owner in sorted(owners, key=lambda o: -kept[o]):
            for session in sorted(owners[owner], key=_most_first):
                excess = self.total - KEPT_BYTES_AFTER_SHED
                if excess <= 0:
                    return
                self.total -= session.give_up(excess)

    def rebuild(self, sessions: Mapping[int, Session]) -> None:
        """Count again from the sessions' results (after a snapshot was installed), and
        hold them within the bounds (a snapshot of an earlier version may exceed them)."""
        self.total = 0
        for sid, session in sessions.items():
            done, limit = session.done, limit_of(sid)
            session.sizes, session.kept_bytes = {}, 0
            for seq, result in list(done.items()):
                size = kept_size(result, limit)
                if size > limit:
                    done[seq] = NOT_KEPT
                elif size:
                    session.sizes[seq] = size
                    session.kept_bytes += size
            over = session.kept_bytes - limit
            if over > 0:
                session.give_up(over)
            self.total += session.kept_bytes
        if self.total > KEPT_BYTES:
            self.shed(sessions)


def _most_first(session: Session) -> int:
    return -session.kept_bytes


SEQ_REUSED = OpError("seq_reused", "this sequence number of the session was used by another "
                     "op; nothing was applied (a client gives each op its own)")


def identity(op: list[Any]) -> tuple[int, Any]:
    """What client op ``[seq, code, *args]`` is, enough to tell a retry from another op
    under its seq: its code and first argument (when a name or a number)."""
    first = op[2] if len(op) > 2 else None
    return op[1], first if type(first) is str or type(first) is int else None

"""One client's link as its member serves it: its session, permissions, watches, the
ops read but not yet proposed, and its outgoing frames (batched per loop iteration,
disconnected when it does not read them).

A batch of answers is handed to the connection as soon as it is encoded, not later in
the loop iteration: the answers of a commit leave before the commit index reaches the
followers, whose applying would otherwise take the CPU the client needs first.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from lazily_transports import LinkStream

from ..core.groups import SEPARATOR
from ..errors import shown
from ..replicated import objects
from ..replicated import ops as C
from ..replicated.session_register import registered
from . import protocol as P
from .access import READ, ClientGrant
from .batching import PendingOp
from .budget import Budget
from .group_names import GroupTopics, group_forms
from .outbox import AnswerBudget, Outbox
from .popped import CHECKED, GIVE_BACKS, Giving, give_back_refusal, one_copy_each

if TYPE_CHECKING:
    from ..replicated.view import ReadView

log = logging.getLogger(__name__)

#: Answers and notifications queued for one client before it is disconnected.
MAX_OUTBOX_BYTES = 64 * 1024 * 1024
#: Answers, notifications and states queued for all clients of a member: over it, the
#: links that took bytes least recently are disconnected (:class:`.outbox.AnswerBudget`).
#: Room for two of the largest states a client reads.
MAX_QUEUED_ANSWERS = 2 * P.MAX_ASSEMBLED_BYTES
_REFUSALS_CACHED = 1024
#: Longest name whose check is kept...
_NAME_CACHED = 1024
#: ... and the most characters of names and refusals kept for one link (at most 256 KiB
#: of text however wide its characters: a client's 64 links hold at most 16 MiB).
_CACHED_CHARS = 64 * 1024

Key = tuple[str, str]
#: A guarded watch refused again: nothing more goes to the client for it.
_REVOKED = object()
_NEVER = 2**63

def _too_large(rid: int, size: int) -> list[Any]:
    """The error answering request ``rid`` instead of its answer, ``size`` bytes encoded
    (the state of an object the client reads), more than a client reassembles."""
    return [rid, P.ERROR, ["too_large", f"the answer is {size:,} bytes, more than a client "
                           f"reads ({P.MAX_ASSEMBLED_BYTES:,}): read this object on a member",
                           size, P.MAX_ASSEMBLED_BYTES]]


class ClientConnection:
    """One client link: its session, permissions, watches and outgoing frames."""

    def __init__(self, stream: LinkStream, grant: ClientGrant, max_in_flight: int,
                 group_topics: GroupTopics = lambda name, undeclared: [],
                 giving: Giving | None = None, answers: AnswerBudget | None = None) -> None:
        self.grant = grant
        #: The give-backs the member admitted (shared by its client links).
        self.giving = Giving() if giving is None else giving
        self._group_topics = group_topics
        self.session: int | None = None
        #: A REGISTER of this link is unanswered, and whether the cluster refused an op
        #: of this link's session as not held since the last one (:mod:`.greeting`).
        self.registering = False
        self.session_lost = False
        #: Why this link's last HELLO was refused (its ops are refused saying so).
        self.hello_refused: str | None = None
        #: Its HELLO was answered.
        self.greeted = False
        #: The client protocol its HELLO named (:data:`~.protocol.SERVED_VERSIONS`).
        self.protocol = P.VERSION
        self.slots = Budget(max_in_flight)
        self.watches: set[Key] = set()
        #: Characters of the watched objects' names, in all.
        self.watched_bytes = 0
        #: The work queues this client watches only as consumer groups (it may not read
        #: them by their own names): the object the grant was checked against (``None``:
        #: not declared, granted by the name's form) and the applied-op count the client
        #: holds it as of. See :meth:`admits`.
        self.guarded: dict[Key, tuple[object, int]] = {}
        #: Guarded watches refused since the server last dropped them.
        self.revoked: list[Key] = []
        self.replay: list[list[Any]] = []
        self.refusals: dict[tuple[int, Any], str | None] = {}
        #: Characters of the names and refusals in :attr:`refusals`.
        self.cached_chars = 0
        self.outbox = Outbox(stream, limit=MAX_OUTBOX_BYTES, on_overflow=self._overflow,
                             budget=answers)
        self._answers = answers
        #: Loop time the member last received bytes on this link, a frame or part of one
        #: (:mod:`.idle`).
        self.heard = self.outbox.progress
        #: The link's bytes received when the idle sweep last counted bytes received as
        #: progress (:mod:`.idle`).
        self.received = stream.channel.received_bytes
        #: The link's bytes received when the member last read a whole frame from it:
        #: more since, and a frame may be half-read (:mod:`.idle`).
        self.framed = self.received
        #: Frames the member took from this link: a refusal over the frame budget says
        #: how many (:mod:`.frame_budget`), none after it is read.
        self.frames_read = 0
        #: The member holds off reading this link (its requests wait for room).
        self.blocked = False
        #: Where the link comes from, and its frames refused as unreadable
        #: (:mod:`.link_log`).
        self.address = stream.channel.remote_address
        self.unreadable = 0
        self._pending: list[list[Any]] = []
        #: Ops read and checked, proposed together at the next flush point.
        self.ops: list[PendingOp] = []

    @property
    def closed(self) -> bool:
        return self.outbox.closed

    def _overflow(self, queued: int) -> None:
        log.warning("client %r does not read its answers (%d bytes queued); disconnected",
                    self.grant.name, queued)

    def send(self, frame: list[Any]) -> None:
        """Queue ``frame``; the frames of one loop iteration leave as one batch."""
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(frame)

    def send_answer(self, frame: list[Any]) -> None:
        """Queue the answer ``frame``, its request's slot given back. The answer to the
        link's only request in flight, with nothing else queued for it in this loop
        iteration, leaves now (a light client's answer waits for no other work of the
        iteration) while the shared budget lets it (:meth:`.AnswerBudget.at_once`);
        others as :meth:`send` (a batch leaves after the messages of the step that
        applied it)."""
        if self.slots.used or self._pending or (
                self._answers is not None and not self._answers.at_once()):
            self.send(frame)
        else:
            self._pending.append(frame)
            self._flush()

    def send_state(self, frame: list[Any]) -> None:
        """Send ``frame`` (an answer holding an object's state) now, after what was queued
        before it, as an oversized frame: the server serves no other watch while it is
        queued (:meth:`~.outbox.Outbox.oversized_sent`), so states go out at the pace
        the client reads them and are never counted as answers it does not read."""
        self._flush()
        self._write([frame], paced=True)

    def flush(self) -> None:
        """Send the frames queued in this iteration now (a batch when several)."""
        self._flush()

    def _flush(self) -> None:
        frames, self._pending = self._pending, []
        if frames:
            self._write(frames)

    def _write(self, frames: list[list[Any]], *, paced: bool = False) -> None:
        """Send ``frames`` as one (a batch when several); ``paced``: as an oversized
        frame whatever its size."""
        if self.closed:
            return
        frame = frames[0] if len(frames) == 1 else [0, P.BATCH, frames]
        data = P.encode(frame)
        if len(data) > P.MAX_ASSEMBLED_BYTES:  # more than a client reads: sent apart
            if len(frames) > 1:
                for one in frames:
                    self._write([one])
                return
            rid: int = frames[0][0]
            if not rid:  # a notice: the client reads it again after relinking
                log.warning("client %r: a notice of %d bytes, more than a client reads; "
                            "disconnected", self.grant.name, len(data))
                self.outbox.close()
                return
            data = P.encode(_too_large(rid, len(data)))
        if paced or len(data) > MAX_OUTBOX_BYTES:  # states: not a sign of a stuck reader
            self.outbox.send_oversized(P.parts(data))
        else:
            for piece in P.parts(data):
                self.outbox.send(piece)
        self.outbox.flush()

    def refusal(self, code: int, name: Any) -> str | None:
        key = (code, name)
        if key in self.refusals:
            found = self.refusals[key]
        else:
            found = self.grant.refusal(code, name)
            if name is None or len(name) <= _NAME_CACHED:  # a long one is checked each time
                chars = (0 if name is None else len(name)) + (0 if found is None else len(found))
                if (len(self.refusals) > _REFUSALS_CACHED
                        or self.cached_chars + chars > _CACHED_CHARS):
                    self.refusals.clear()
                    self.cached_chars = 0
                self.refusals[key] = found
                self.cached_chars += chars
        if found is not None and type(name) is str and C.family_of(code) == "work_queue":
            return self._as_group(code, name, found, undeclared=False)
        return found

    def state_refusal(self, op: PendingOp, view: ReadView) -> Exception | None:
        """Why ``op`` (its shape and names checked) may not be proposed for this client
        given the member's applied state: expiry rules, a new consumer group's name, a
        give-back (:mod:`.popped`)."""
        code, args = op.code, op.args
        if code == C.EXPIRY_RULES:
            refusal = self.rules_refusal(args, view)
            return None if refusal is None else P.PermissionDenied(refusal)
        if (code == C.GROUP_DECLARE and isinstance(args[1], str) and SEPARATOR in args[1]
                and args[1] not in (view.groups.get(args[0]) or {})):
            return P.RequestRefused(
                f"a client's new consumer group may not have {SEPARATOR!r} in its name "
                f"({shown(args[1])}): topic 'a' group 'b:c' and topic 'a:b' group 'c' would "
                "be one work queue; nothing was applied")
        if code in GIVE_BACKS and self.refusal(C.QUEUE_PUSH, args[0]) is not None:
            session = self.session or 0
            record = view.client_popped(session)
            once = one_copy_each(record, code, args)
            if once is not None:  # two copies of an id popped together: one goes back
                op.args = args = once
            if ((refusal := give_back_refusal(record, self.giving, session, op.seq, code,
                                              args, self.grant.name))
                    and not self._applied_before(op.seq, view)):
                return P.PermissionDenied(refusal)
            op.code = CHECKED[code]  # applied only as the session's record allows then
        return None

    def _applied_before(self, seq: int, view: ReadView) -> bool:
        """Whether op ``seq`` of this link's registered session applied: a retry of it
        (its earlier attempt took the elements off the session's record) is then
        proposed and answered from the session, never applied again (a registered
        session the cluster forgot refuses it)."""
        session = self.session or 0
        return registered(session) and view.client_op_applied(session, seq)

    def rules_refusal(self, args: list[Any], view: ReadView) -> str | None:
        """Why this client may not give an object its expiry rules (``EXPIRY_RULES``
        ``args``). Without ``admin`` on the name it may only repeat the object's rules or
        give rules to an object that never held an element: rules set later would expire
        what it holds and what others push to it."""
        name, kind = args[0], args[1]
        if kind not in objects.KINDS or self.grant.refusal(C.QUEUE_PURGE, name) is None:
            return None  # a wrong kind is the state machine's to refuse
        known = view.expiry.get((kind, name))
        if known is not None and known.rules() == list(args[2:]):
            return None
        if _never_held(view, kind, name):
            return None
        return (f"client {self.grant.name!r} may not set the expiry rules of {kind} "
                f"{shown(name)}: it exists without them, and setting them needs the admin "
                "permission for that name (open it without ttl/max_age, or have an admin "
                "declare them)")

    def read_refusal(self, kind: str, name: str) -> str | None:
        """Why this client may not read (mirror) the ``kind`` object ``name``."""
        found = self.refusal(READ, name)
        if found is not None and kind == "work_queue":
            return self._as_group(READ, name, found, undeclared=True)
        return found

    def reads_as_group(self, kind: str, name: str) -> bool:
        """Whether a granted read of ``kind`` ``name`` holds only as a consumer group's."""
        return kind == "work_queue" and self.refusal(READ, name) is not None

    def guard(self, key: Key, view: ReadView) -> None:
        """Watching ``key`` (granted) from ``view``'s state now: guard it when granted only
        as a consumer group's work queue."""
        if self.reads_as_group(*key):
            self.guarded[key] = (view.work_queue(key[1]), view.tapped)
        else:
            self.guarded.pop(key, None)

    def admits(self, key: Key, index: int, view: ReadView) -> bool:
        """Whether the guarded ``key``'s op numbered ``index`` goes to this client as an op.

        It does while the object under ``key`` is the one the grant was checked against
        (objects are never put back, so it was that one throughout). Another one
        (declared, deleted, replaced) is checked again: the client then gets it as it
        stands now (a ``RESET``, covering the ops up to now), or is refused it
        (:meth:`settle`). An undeclared name's ops never go out: what they made is gone
        (or the check would have found it).
        """
        seen, covered = self.guarded[key]
        if index <= covered:
            return False
        state = view.work_queue(key[1])
        if state is seen:
            return state is not None
        self.settle(key, view)
        return False

    def capture(self, view: ReadView, key: Key) -> Any:
        """``key``'s object in ``view`` in the form this client's protocol reads."""
        return objects.capture(view, *key, runs=self.protocol >= P.RUNS_VERSION)

    def settle(self, key: Key, view: ReadView) -> None:
        """Check the guarded ``key`` again against ``view``'s state now: send it as it
        stands, or refuse it (``[0, ERROR, ["permission", why, kind, name]]``) and record it
        in :attr:`revoked` for the server to stop watching."""
        if self.guarded[key][0] is _REVOKED:
            return
        refusal = self.read_refusal(*key)
        if refusal is None:
            self.guarded[key] = (view.work_queue(key[1]), view.tapped)
            self.send([0, P.RESET, [*key, view.tapped, self.capture(view, key)]])
            return
        self.guarded[key] = (_REVOKED, _NEVER)
        self.revoked.append(key)
        self.send([0, P.ERROR, ["permission", refusal, *key]])

    def _as_group(self, code: int, name: str, found: str, *, undeclared: bool) -> str | None:
        """A consumer group's work queue is consumed (and read) with the consume
        permission on its topic's name; ``found`` when that does not open it either, with a
        hint drawn from the name's form alone: whether such an object exists is not told
        to a client that may not see it."""
        topics = self._group_topics(name, undeclared)
        asked = C.WORK_CLAIM if code == READ else code
        if any(self.grant.refusal(asked, topic) is None for topic in topics):
            return None
        form = group_forms(name, 1)
        if not form:
            return found
        return (f"{found} (as consumer group {shown(name)} it needs the consume permission "
                f"on topic {shown(form[0])})")

    def op_refusal(self, code: int, args: list[Any]) -> str | None:
        """Why this client may not propose op ``code`` with ``args``; ``None`` if it may.
        A transaction needs the permission of every op it carries."""
        if code != C.TXN:
            name = args[0] if C.family_of_op(code, args) is not None and args else None
            return self.refusal(code, name if isinstance(name, str) else None)
        for op in args:
            if (type(op) is not list or len(op) < 2 or type(op[0]) is not int
                    or op[0] not in C.TXN_OPS):
                return ("a transaction carries queue and work-queue pushes, topic publishes, "
                        "acks and nacks, each [code, name, ...]")
            refusal = self.refusal(op[0], op[1] if isinstance(op[1], str) else None)
            if refusal is not None:
                return refusal
        return None

    def close(self) -> None:
        self.outbox.close()


def _never_held(view: ReadView, kind: str, name: str) -> bool:
    """Whether the ``kind`` object ``name`` never held an element (or does not exist)."""
    if kind == "queue":
        queue = view.queue(name)
        return queue is None or queue.id_state()[0] == 0
    if kind == "topic":
        topic = view.topic(name)
        return topic is None or (topic.end_offset() == 0 and not topic.subscriptions())
    work = view.work_queue(name)
    if work is None:
        return True
    core = work.core
    return (core.next_ids()[1] == 0 and core.pending_len() == 0 and core.in_flight_len() == 0
            and not core.dead_letters())

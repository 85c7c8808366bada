"""The model of checked give-backs (``ops.CHECKED_GIVE_BACKS``: a consume-only client's,
as its member proposes them), replayed from the committed history beside the queue
model (:mod:`.checker`).

Each client session's pops (``QUEUE_POP_STAMPED`` / ``QUEUE_POP_HEADERS``, the first
application of each) note the ids they handed out, its oldest pops given up past
:data:`~lazily_queue.replicated.session_popped.SESSION_ELEMENTS`; every give-back that
applied takes its ids off. The first ``POPPED_CHECKING`` of the log empties every
session's record, later ones change nothing; a checked give-back applied before any did
so applies and empties them the same way. A member that becomes leader of a state not
checking proposes the op first in its term, so in the simulated (fresh) clusters no
client session's pop applies before it: one that does fails the run. From then on each
checked give-back applies exactly when its session holds every id it names, once, and
is refused otherwise (``give_back_refused``), nothing of it applied.
The simulated runs stay far below the records' bounds over all sessions.
(:class:`~.history.History` checks that every replica applying an entry answers its
checked give-backs as the first one did.)
"""

from __future__ import annotations

from collections import OrderedDict

from lazily_queue.core import ids
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.session_popped import REFUSED, SESSION_ELEMENTS
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE

from .history import AppliedOp, Violation

_POPS = frozenset({C.QUEUE_POP_STAMPED, C.QUEUE_POP_HEADERS})
#: Every give-back by id, checked or not.
GIVE_BACKS = frozenset({C.QUEUE_UNPOP_STAMPED, C.QUEUE_UNPOP_HEADERS, *C.CHECKED_GIVE_BACKS})


class CheckedGiveBacks:
    """Each client session's popped ids not given back, and whether checking began."""

    def __init__(self) -> None:
        #: session -> pop seq -> ids of queue ``name`` it handed out, not given back.
        self.held: dict[int, OrderedDict[int, tuple[str, set[int]]]] = {}
        self.checking = False
        self.refused = 0
        self.admitted = 0

    def applies(self, op: AppliedOp) -> bool:
        """Whether ``op`` (a queue op of the log, its first application) applies as far as
        the records go; raises :class:`Violation` when a checked give-back was answered
        otherwise than the model says."""
        if op.session <= CLIENT_SESSION_BASE:
            return True
        if op.code in C.CHECKED_GIVE_BACKS:
            admitted = self._admits(op)
            refused = isinstance(op.result, OpError) and op.result.code == REFUSED
            if admitted == refused:
                raise Violation(f"index {op.index}: checked give-back {op.session:x}/{op.seq} "
                                f"{op.args!r:.80} returned {op.result!r:.100}; the record "
                                f"model says it {'applies' if admitted else 'is refused'}")
            self.admitted += admitted
            self.refused += not admitted
            if not admitted:
                return False
        if op.code in GIVE_BACKS and op.result is None:
            self._take(op)
        elif op.code in _POPS and isinstance(op.result, list) and op.result[0]:
            if not self.checking:
                raise Violation(f"index {op.index}: pop {op.session:x}/{op.seq} of a client "
                                "session applied before checking began (a new leader "
                                "proposes POPPED_CHECKING first in its term)")
            self._popped(op)
        return True

    def start_checking(self) -> None:
        """A ``POPPED_CHECKING`` applied (or a checked give-back before any did)."""
        if not self.checking:
            self.held.clear()
            self.checking = True

    def _admits(self, op: AppliedOp) -> bool:
        if not self.checking:
            self.start_checking()
            return True
        named = [i for i, _ in ids.expand(op.args[2])]
        held = {i for name, got in self.held.get(op.session, {}).values()
                if name == op.args[0] for i in got}
        return len(set(named)) == len(named) and all(i in held for i in named)

    def _take(self, op: AppliedOp) -> None:
        pops = self.held.get(op.session, OrderedDict[int, tuple[str, set[int]]]())
        for i, _ in ids.expand(op.args[2]):
            for seq, (name, got) in list(pops.items()):
                if name == op.args[0] and i in got:
                    got.discard(i)
                    if not got:
                        del pops[seq]

    def _popped(self, op: AppliedOp) -> None:
        pops = self.held.setdefault(op.session, OrderedDict())
        name = op.args[0]
        got = {i for i, _ in ids.expand(op.result[1])}
        for seq, (other, older) in list(pops.items()):  # popped again: the earlier is gone
            if other == name and older & got:
                older -= got
                if not older:
                    del pops[seq]
        pops[op.seq] = (name, got)
        while sum(len(held) for _, held in pops.values()) > SESSION_ELEMENTS:
            pops.popitem(last=False)

"""The state machine's snapshot: its queues, addresses and sessions with what they popped
and did not give back (:mod:`.session_popped_snapshot`), then the section of each op
family (:class:`~.family.Section`); :class:`StateSnapshots` gives the state machine its
snapshot methods."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from ..core.fifo import Fifo
from . import session_popped_snapshot
from .events import Restored
from .family import Section
from .op_table import SECTIONS
from .results import decode_result, done_later, done_now
from .session_results import Session

if TYPE_CHECKING:
    from .state_machine import StateMachine

SNAPSHOT_FORMAT = 1


def capture(sm: StateMachine, sections: Iterable[Section], deferred: bool) -> dict[str, Any]:
    """``sm``'s state as plain data (see :meth:`~.state_machine.StateMachine.capture`)."""
    done = done_later if deferred else done_now
    doc: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "now": sm.now,
        "queues": {
            name: [q.capacity(), q.is_closed(), q.elements()] for name, q in sm.queues.items()
        },
        "addresses": dict(sm.addresses),
        "sessions": {
            str(sid): [s.floor, s.seen, done(list(s.done.items()))]
            for sid, s in sm.sessions.items()
        },
    }
    popped = session_popped_snapshot.capture(sm)
    if popped is not None:
        doc[session_popped_snapshot.KEY] = popped
    if sm.popped.checking:
        doc[session_popped_snapshot.CHECKING] = True
    for sec in sections:
        part = (sec.deferred or sec.capture)(sm) if deferred else sec.capture(sm)
        if part is not None:  # an empty optional section is left out
            doc[sec.name] = part
    return doc


#: What a state machine keeps through an install: its configuration, counters, tap and
#: events (the installed state's events are added to them).
_NOT_STATE = frozenset({"max_client_sessions", "_again", "events", "applied_batches",
                        "applied_ops", "duplicate_ops", "tap", "tapped"})


def prepare(sm: StateMachine, sections: Iterable[Section], doc: Any) -> StateMachine:
    """A new state machine holding ``doc``'s state (:func:`capture`'s), with ``sm``'s
    bounds; ``sm`` is not changed. Raises when ``doc`` does not restore."""
    from .state_machine import StateMachine  # a subclass's own parts are not state

    prepared = StateMachine(sm.max_client_sessions)
    prepared.receipt_ledger.limit = sm.receipt_ledger.limit
    restore(prepared, sections, doc)
    return prepared


def install(sm: StateMachine, prepared: StateMachine) -> None:
    """Replace ``sm``'s state by ``prepared``'s (:func:`prepare`'s), which is given up."""
    for name, value in vars(prepared).items():
        if name not in _NOT_STATE:
            setattr(sm, name, value)
    sm.events.extend(prepared.events)
    prepared.events = []


def restore(sm: StateMachine, sections: Iterable[Section], doc: Any) -> None:
    """Replace ``sm``'s state by ``doc``'s (:func:`capture`'s) in place: a ``doc`` that
    does not restore may leave it half replaced (:func:`prepare` does not)."""
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
        raise ValueError("unknown state machine snapshot format")
    restored_queues: dict[str, Fifo[Any]] = {}
    for name, (capacity, closed, elements) in doc["queues"].items():
        restored_queues[str(name)] = Fifo.restored(capacity, elements, closed)
    found: list[tuple[int, Session]] = []
    for sid, (floor, seen, done) in doc["sessions"].items():
        kept = {int(seq): decode_result(r) for seq, r in done}
        found.append((int(sid), Session(int(floor), kept, int(seen),
                                        min([int(floor), *kept]))))
    # Stable: a snapshot taken here lists them in this order already.
    sessions = OrderedDict(sorted(found, key=lambda item: item[1].seen))
    sm.now = int(doc["now"])
    sm.queues = restored_queues
    sm.addresses = {str(k): str(v) for k, v in doc["addresses"].items()}
    sm.sessions = sessions
    sm.client_counts.rebuild(sessions)
    sm.kept.rebuild(sessions)
    sm.popped = session_popped_snapshot.restore(sm, doc.get(session_popped_snapshot.KEY),
                                                doc.get(session_popped_snapshot.CHECKING))
    for sec in sections:
        sec.restore(sm, doc.get(sec.name))
    sm.events.append(Restored())


class StateSnapshots:
    """The snapshot methods of :class:`~.state_machine.StateMachine`."""

    def capture(self, deferred: bool = False) -> dict[str, Any]:
        """The whole state as plain data; with ``deferred`` (a snapshot file's capture)
        its large parts are :class:`Later`, made from copies where it is encoded."""
        return capture(cast("StateMachine", self), SECTIONS, deferred)

    def prepare(self, doc: Any) -> StateMachine:
        """``doc``'s state in a new state machine for :meth:`install`; raises unless
        ``doc`` restores cleanly, changing nothing here."""
        return prepare(cast("StateMachine", self), SECTIONS, doc)

    def install(self, prepared: Any) -> None:
        """Replace the whole state by :meth:`prepare`'s."""
        install(cast("StateMachine", self), prepared)

    def validate(self, doc: Any) -> None:
        """Raise unless ``doc`` restores cleanly; change nothing."""
        self.prepare(doc)

    def restore(self, doc: Any) -> None:
        """Replace the whole state by ``doc``'s; a ``doc`` that does not restore changes
        nothing."""
        self.install(self.prepare(doc))

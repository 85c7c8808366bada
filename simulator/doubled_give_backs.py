"""A producer giving one popped element back twice, so the queue holds its id twice.

A client with the produce permission has its give-backs (``QUEUE_UNPOP_STAMPED``)
proposed as they are, unchecked (``ClientConnection.state_refusal`` checks only a
consume-only client's), and the state machine gives back under any id the queue handed
out before (``Fifo.unpop_stamped``). So an application calling ``give_back()`` twice
with one message (again after the first raised with its outcome unknown, say) puts
the id at the head twice, as two ops of its session. A :class:`DoublingProducer` (a
session client) pops one to three elements, gives one of them back twice under two
sequence numbers (one after the other, or the second at once through another member,
as two calls in flight together), now and then the second under another value (any
value may go back under an id the queue gave out), and pops two to four at once. The
next pops (its own, a prefetching giver's, any consumer's) take the copies, both in
one pop or apart.

What must hold besides the models' checks (each copy handed out once, in FIFO order,
under its id and stamp: :mod:`.queue_ids`; a client session's pop holding both copies
applies, its record notes the element once, a checked give-back of it applies at most
once: :mod:`.checked_give_backs`): each of the doubler's give-backs that applied gave
back (:func:`check_doubles`), and every replica's records of popped elements give a
member's gate the same pop, value and stamp for each element held
(:func:`check_records`: a snapshot restores the record the log built).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lazily_queue.core import ids
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_popped import digest
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE
from lazily_queue.replicated.view import ReadView

from .client import QUEUE, Client, Host
from .history import History, Violation
from .session_client import SessionClient

#: The share of doubles whose second give-back goes at once through another member.
AT_ONCE = 0.4
#: The share of doubles whose second give-back carries another value.
FORGED = 0.25


class DoublingProducer(SessionClient):
    """Pops, gives one element back twice, pops again (module docstring)."""

    kind = "doubling-producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.todo: list[tuple[int, list[Any]]] = []
        #: The second give-back of a double sent at once, when the first goes.
        self.at_once: list[Any] | None = None
        #: The sequence numbers proposed with nobody awaiting their answer.
        self.detached: set[int] = set()
        #: Per value, what its applied pops took less what its applied give-backs returned
        #: (from the log, by :func:`check_doubles`).
        self.net: Counter[Any] = Counter()

    @property
    def settled(self) -> bool:
        return super().settled and not self.todo

    @property
    def unawaited(self) -> set[int]:
        """The second give-backs sent at once: nobody awaits their answer."""
        return self.detached

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.todo:
            return self.todo.pop(0)
        if self.draining:
            return None
        return C.QUEUE_POP_STAMPED, [QUEUE, self.rng.randrange(1, 4)]

    def next_op(self) -> None:
        fresh = self.pending is None
        super().next_op()
        pending, again = self.pending, self.at_once
        if not fresh or pending is None or again is None or pending[1] != C.QUEUE_UNPOP_STAMPED:
            return
        self.at_once = None
        others = [n for n in self._running() if n != self.node]
        if others:
            self.seq += 1
            self.detached.add(self.seq)
            self.cluster.propose_detached(
                self.rng.choice(others), C.CLIENT_OP,
                [self.session, self.seq, pending[0], C.QUEUE_UNPOP_STAMPED, *again],
                timeout=self.rng.uniform(0.3, 2.0))

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        if (code != C.QUEUE_POP_STAMPED or self.draining or self.todo
                or not (isinstance(result, list) and result and result[0])):
            return
        values, tags = result[0], list(ids.expand(result[1]))
        n = self.rng.randrange(len(values))
        (i, stamp), value = tags[n], values[n]
        other = f"{value}~{self.cid}" if self.rng.random() < FORGED else value
        self.todo = [(C.QUEUE_UNPOP_STAMPED, [QUEUE, [value], [[i, 1, stamp]]])]
        second = [QUEUE, [other], [[i, 1, stamp]]]
        if self.rng.random() < AT_ONCE:
            self.at_once = second
        else:
            self.todo.append((C.QUEUE_UNPOP_STAMPED, second))
        self.todo.append((C.QUEUE_POP_STAMPED, [QUEUE, self.rng.randrange(2, 5)]))


def check_doubles(history: History, clients: Sequence[Client]) -> dict[str, int]:
    """Every give-back of a :class:`DoublingProducer` that applied gave back (an id the
    queue handed out, with its stamp: ``None``); notes each one's ``net``; returns what
    was seen: ids given back twice, under another value, client sessions' pops taking
    two copies of one id."""
    doublers = {cl.session: cl for cl in clients if isinstance(cl, DoublingProducer)}
    stats: Counter[str] = Counter()
    given: dict[int, Counter[int]] = {s: Counter() for s in doublers}
    for op in history.in_order():
        if not op.args or op.args[0] != QUEUE:
            continue
        if (op.code in (C.QUEUE_POP_STAMPED, C.QUEUE_POP_HEADERS)
                and op.session > CLIENT_SESSION_BASE and isinstance(op.result, list)
                and op.result and op.result[0]):
            named = [i for i, _ in ids.expand(op.result[1])]
            stats["both_in_one_pop"] += len(named) - len(set(named))
        doubler = doublers.get(op.session)
        if doubler is None or history.results.get((op.session, op.seq)) is not op:
            continue
        if op.code == C.QUEUE_POP_STAMPED and isinstance(op.result, list) and op.result:
            doubler.net.update(op.result[0])
        elif op.code == C.QUEUE_UNPOP_STAMPED:
            if op.result is not None:
                raise Violation(f"{doubler.cid}: give-back (seq {op.seq}) {op.args!r:.80} "
                                f"applied at index {op.index} returning {op.result!r:.100}")
            doubler.net.subtract(op.args[1])
            for i, _ in ids.expand(op.args[2]):
                given[op.session][i] += 1
    for counts in given.values():
        stats["doubled"] += sum(1 for n in counts.values() if n > 1)
    return dict(stats)


def record_views(view: ReadView, state: dict[str, Any]) -> dict[int, dict[Any, Any]]:
    """What a member's gate reads in the records of popped elements of the sessions
    ``state`` (its captured state) lists: per session, per ``(queue, id)`` held, the
    pop's seq, the element's stamp and a digest of its value and headers."""
    out: dict[int, dict[Any, Any]] = {}
    for sid, _pops in state.get("session_popped") or ():
        record = view.client_popped(sid)
        if record is None:
            continue
        out[sid] = {(pop.name, i): (pop.seq, pop.stamp(i), digest(*pop.element(i)))
                    for pop in record.pops.values() for i in pop.left}
    return out


def check_records(views: dict[str, dict[int, dict[Any, Any]]]) -> None:
    """Every member's gate reads the same records (:func:`record_views` per member)."""
    first_node, first = next(iter(views.items()))
    for n, held in views.items():
        if held != first:
            diff = sorted(sid for sid in {*held, *first} if held.get(sid) != first.get(sid))
            raise Violation(f"member {n}'s records of popped elements give its gate other "
                            f"pops, values or stamps than member {first_node}'s (client "
                            f"sessions {[f'{sid:x}' for sid in diff][:4]}): a snapshot "
                            "restored another record than the log built")

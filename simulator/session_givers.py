"""Cluster clients that prefetch, hand out part of a batch and give the rest back.

A :class:`SessionGiver` is a session client (:mod:`.session_client`), its session
registered first (``SESSION_REGISTER``, as a client of protocol 5 does), popping up to eight
elements at once (``QUEUE_POP_STAMPED``, a prefetching iterator), handing some out at
once and more one by one, and giving what is left back to the head under the ids it was
popped with (``QUEUE_UNPOP_STAMPED``) at a random later point: at once, or after
crashes, partitions and failovers had time to happen, and always once the run drains
(the iterator closes). The give-back is retried across members under its sequence
number like any client op, and also when its answer is lost after it applied (the link
ended: ``ANSWER_LOST``). Now and then the client dies holding a batch (what it held
is gone with it), or the give-back fails unsent (no sequence number used: its slot did
not come before its deadline, as the client's ``call`` fails it).

A consume-only giver (``consume_only``) is admitted as a client without the produce
permission is: through the member's real gate,
:func:`~lazily_queue.client.popped.give_back_refusal` over the session's record of
popped elements as that member applied it and the member's
:class:`~lazily_queue.client.popped.Giving` (a member's is new at each restart). A
give-back the gate refuses is not proposed: the client keeps those elements
(``stranded``), unless the member holds that sequence number of the session as applied
(an earlier attempt took them off the record): then it is proposed and answered from
the session. A member refuses only while it has not applied the pop (it lags), or
holds no longer the session: one that applied the pop, the session held, and refused
its give-back (say, restarted from or installed a snapshot taken after the pop: the
record travels in snapshots) lost the elements and fails the run. A refused
give-back an earlier attempt of which went unanswered (no answer, or one that did not
say it was not applied) has its outcome unknown, as the client reports it: its
elements are kept unless the log applied it (``refused_unknown_applied``).

A consume-only giver sends some give-backs twice (:data:`GIVE_TWICE`): under a new
sequence number, through another member at once, if its gate admits it; the state
machine applies at most one of them (:mod:`lazily_queue.replicated.session_popped`).
What the log made of them is checked by :mod:`.give_back_checks`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from lazily_queue.client.popped import CHECKED, Giving, give_back_refusal
from lazily_queue.core import ids
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.client_sessions import owner_tag
from lazily_queue.replicated.ops import OpError
from lazily_queue.replicated.session_popped import REFUSED
from lazily_queue.replicated.session_register import REGISTERED_BASE, registered

from .client import FAILED, OK, QUEUE, UNKNOWN, Observed
from .registered_sessions import register_args
from .session_client import DOUBLE_SEND, SessionClient

if TYPE_CHECKING:
    from .cluster import Cluster

#: The share of batches the client dies holding (not once the run drains).
DIES = 0.05
#: The share of give-backs that fail unsent (no slot before their deadline).
UNSENT = 0.05
#: The chance, at each act while it holds a batch, that it hands out one more element.
HAND_ONE = 0.3
#: The share of give-backs whose answer is lost after they applied (the link ended).
ANSWER_LOST = 0.1
#: The share of retries sent on a new link to the same member (a client reconnecting).
RECONNECT = 0.5
POPS = frozenset({C.QUEUE_POP_STAMPED, C.QUEUE_POP_HEADERS, C.QUEUE_POP_MANY, C.QUEUE_POP})
#: The share of a consume-only giver's give-backs also sent under another sequence number
#: through another member at once (an application giving back one message twice).
GIVE_TWICE = 0.2
GIVE_BACKS = frozenset({*C.CHECKED_GIVE_BACKS, C.QUEUE_UNPOP_STAMPED, C.QUEUE_UNPOP_HEADERS,
                         C.QUEUE_UNPOP_MANY, C.QUEUE_UNPOP})


class _Link:
    """A client link to one member incarnation."""

    def __init__(self, node: str, incarnation: int) -> None:
        self.node, self.incarnation = node, incarnation


class SessionGiver(SessionClient):
    """Pops batches, hands out part, gives the rest back (module docstring)."""

    kind = "session-giver"

    def __init__(self, cid: str, cluster: Cluster, rng: random.Random,
                 consume_only: bool) -> None:
        super().__init__(cid, cluster, rng)
        self.session = 0  # registered at the first act
        self.sim = cluster
        self.consume_only = consume_only
        #: The rest of the last batch, not yet handed out: ``(values, runs)``.
        self.held: tuple[list[Any], list[Any]] | None = None
        self.give_at = 0.0
        self.handed: list[Any] = []
        #: Elements it kept, by why: ``died``, ``unsent``, ``refused`` (a give-back it
        #: was told was not applied).
        self.stranded: dict[str, list[Any]] = {"died": [], "unsent": [], "refused": []}
        #: Give-backs refused at a member's gate after an earlier attempt went unanswered,
        #: their outcome unknown (sequence number -> elements): kept unless one applied.
        self.refused_seqs: dict[int, list[Any]] = {}
        #: Give-backs refused with no attempt gone unanswered (sequence number ->
        #: elements): the client is told they were not applied.
        self.refused_told: dict[int, list[Any]] = {}
        #: Sequence numbers an attempt of which went unanswered.
        self.unanswered: set[int] = set()
        #: The sequence number of the pop whose rest it holds.
        self.held_pop = 0
        #: Give-backs refused by a member that had applied their pop, the session held
        #: there (what the member's record lost them by): what the check reports.
        self.refused_holding: list[str] = []
        #: Give-backs a gate let through as applied before (answered from the session).
        self.retried_applied = 0
        self.gave_back = 0
        self.given_elements = 0
        self._link: _Link | None = None
        self._giving: dict[tuple[str, int], Giving] = {}
        #: Give-backs sent twice (:meth:`_give_twice`): seq -> the other's seq; those
        #: tried; those refused (at a gate, or as they applied: elements -> kept unless
        #: the other applied).
        self.twice: dict[int, int] = {}
        self.twice_tried: set[int] = set()
        self.twice_refused: dict[int, list[Any]] = {}

    @property
    def settled(self) -> bool:
        return super().settled and self.held is None

    @property
    def unawaited(self) -> set[int]:
        """The sequence numbers of ops that may have applied with no answer awaited: a
        retry refused at a gate after an attempt went unanswered, a give-back's second."""
        return {*self.refused_seqs, *self.twice_refused, *self.twice.values()}

    def next_inner(self) -> tuple[int, list[Any]] | None:
        if self.held is not None:
            (values, runs), self.held = self.held, None
            return C.QUEUE_UNPOP_STAMPED, [QUEUE, values, runs]
        if self.draining:
            return None
        return C.QUEUE_POP_STAMPED, [QUEUE, self.rng.randrange(2, 9)]

    def next_op(self) -> None:
        if self.session == 0:
            if self.draining:
                self.stopped = True
            else:
                self.call(C.SESSION_REGISTER, register_args(owner_tag(self.cid), self),
                          self._registered, timeout=self.rng.uniform(0.3, 2.0))
            return
        if self.pending is None and self.held is not None:
            if not self.draining and self.sim.now() < self.give_at:
                if self.rng.random() < HAND_ONE:
                    self._hand_out(1)
                return
            if not self.draining and self.rng.random() < UNSENT:
                self.stranded["unsent"].extend(self.held[0])
                self.held = None
                return
        if self.pending is None:
            inner = self.next_inner()
            if inner is None:
                self.stopped = True
                return
            self.seq += 1
            self.pending = (self.seq, *inner)
            self.maybe_applied = False
        seq, code, args = self.pending
        link = self._current_link()
        if self.consume_only and not self._admitted(link, seq, code, args):
            return
        proposed = CHECKED.get(code, code) if self.consume_only else code  # as its gate does
        wrapped = self._wrapped(seq, proposed, args)
        self.grouped = wrapped[0] == C.CLIENT_OPS
        obs = self.call(wrapped[0], wrapped[1:], self._done, timeout=self.rng.uniform(0.3, 2.0))
        if obs is None:
            return
        self.attempts += 1
        obs.session, obs.seq, obs.code, obs.args = self.session, seq, code, list(args)
        others = [n for n in self._running() if n != self.node]
        if (proposed != code and others and seq not in self.twice_tried
                and self.rng.random() < GIVE_TWICE):
            self._give_twice(self.rng.choice(others), seq, proposed, args)
        elif self.rng.random() < DOUBLE_SEND and others:
            other = self.rng.choice(others)
            if proposed != code and self._refusal(other, seq, code, args) is not None:
                return  # that member's gate refuses it
            again = self._wrapped(seq, proposed, args)
            self.cluster.propose_detached(other, again[0], again[1:],
                                          timeout=self.rng.uniform(0.3, 2.0))

    def _give_twice(self, other: str, seq: int, proposed: int, args: list[Any]) -> None:
        """Give back what give-back ``seq`` does under a new sequence number through member
        ``other`` at once, unless its gate refuses (as ``give_back()`` called twice
        concurrently while linked to two members): one of them may apply, never both."""
        self.twice_tried.add(seq)
        self.seq += 1
        if self._refusal(other, self.seq, C.QUEUE_UNPOP_STAMPED, args) is None:
            self.twice[seq] = self.seq  # its floor: ``seq``, unanswered
            self.cluster.propose_detached(other, C.CLIENT_OP, [self.session, self.seq, seq,
                                                               proposed, *args],
                                          timeout=self.rng.uniform(0.3, 2.0))

    def _registered(self, obs: Observed) -> None:
        if obs.outcome == OK and type(obs.result) is int and obs.result >= REGISTERED_BASE:
            self.session, self.seq = obs.result, 0
        else:  # another registration next time (an applied one stays unused)
            self._move()

    def _current_link(self) -> _Link:
        incarnation = self.sim.nodes[self.node].incarnation
        link = self._link
        if link is None or link.node != self.node or link.incarnation != incarnation:
            link = self._link = _Link(self.node, incarnation)
        return link

    def _refusal(self, n: str, seq: int, code: int, args: list[Any]) -> str | None:
        """Member ``n``'s gate for a give-back of this client (its session's record as
        ``n`` applied it, and the give-backs ``n`` admitted since it started)."""
        key = (n, self.sim.nodes[n].incarnation)
        giving = self._giving.get(key)
        if giving is None:
            giving = self._giving[key] = Giving()
        view = self.sim.nodes[n].view
        record = None if view is None else view.client_popped(self.session)
        return give_back_refusal(record, giving, self.session, seq, code, args, self.cid)

    def _admitted(self, link: _Link, seq: int, code: int, args: list[Any]) -> bool:
        """The member's gate for a client without the produce permission
        (``ClientConnection.state_refusal``); ``False`` when it refused the op."""
        if code == C.QUEUE_POP_STAMPED:
            return True
        if self._refusal(link.node, seq, code, args) is None:
            return True
        view = self.sim.nodes[link.node].view
        if (registered(self.session) and view is not None
                and view.client_op_applied(self.session, seq)):
            self.retried_applied += 1
            return True  # answered from the session
        self.pending = None
        if seq in self.twice:  # the other may have given them back
            self.twice_refused[seq] = list(args[1])
            return False
        self._refused_holding(link.node, seq, args)
        if seq in self.unanswered:
            self.refused_seqs[seq] = list(args[1])
        else:
            self.refused_told[seq] = list(args[1])
            self.stranded["refused"].extend(args[1])
        return False

    def _refused_holding(self, n: str, seq: int, args: list[Any]) -> None:
        """Note the give-back ``seq`` (``args``) member ``n``'s gate refused if ``n`` holds
        the pop it gives back from as applied in the session, unless the pop handed out
        an id twice and ``args`` give it back twice, or as another copy than the first
        (the record holds the element once, as its first copy)."""
        node = self.sim.nodes[n]
        if (node.view is None or node.replica is None
                or not node.view.client_op_applied(self.session, self.held_pop)):
            return  # it has not applied the pop yet, or no longer holds the session
        pop = self.sim.history.results.get((self.session, self.held_pop))
        if pop is not None and _copies_refused(pop.result, args):
            return
        first = node.replica.journal.first_index
        self.refused_holding.append(
            f"give-back (seq {seq}) refused by {n} (incarnation {node.incarnation}), which "
            f"holds its pop (seq {self.held_pop}, index {pop.index if pop else '-'}) as "
            "applied in the session"
            + (f" (its log starts at {first}: the pop came in a snapshot)"
               if pop is not None and first > pop.index else ""))

    def _done(self, obs: Observed) -> None:
        if (obs.outcome == OK and obs.code == C.QUEUE_UNPOP_STAMPED
                and self.rng.random() < ANSWER_LOST):
            obs.outcome = UNKNOWN  # applied; the link ended before its answer came
        elif obs.outcome == OK and isinstance(obs.result, OpError) and obs.result.code == REFUSED:
            # refused as it applied: the other of a give-back sent twice applied first
            if obs.seq in self.twice:
                self.twice_refused[obs.seq] = list(obs.args[1])
            else:
                self.stranded["refused"].extend(obs.args[1])
        if obs.outcome not in (OK, FAILED):
            self.unanswered.add(obs.seq)
        super()._done(obs)

    def lost(self, obs: Observed) -> None:
        self.unanswered.add(obs.seq)
        super().lost(obs)

    def _move(self) -> None:
        if self.session and self.cluster.running(self.node) and self.rng.random() < RECONNECT:
            self._link = None  # a new link to the same member
            self.retries += 1
            return
        super()._move()

    def answered(self, code: int, args: list[Any], result: Any) -> None:
        if code == C.QUEUE_UNPOP_STAMPED:
            if result is None:
                self.gave_back += 1
                self.given_elements += len(args[1])
            return
        if not (isinstance(result, list) and result and result[0]):
            return
        values, runs = result[0], result[1]
        if not self.draining and self.rng.random() < DIES:
            self.stranded["died"].extend(values)
            return
        self.held, self.held_pop = (list(values), list(runs)), self.seq
        self._hand_out(self.rng.randrange(0, len(values)))
        wait = self.rng.choice([0.0, self.rng.uniform(0.0, 0.3), self.rng.uniform(0.3, 2.0)])
        self.give_at = self.sim.now() + wait

    def _hand_out(self, n: int) -> None:
        """Hand the first ``n`` held elements to the application."""
        if self.held is None or n <= 0:
            return
        values, runs = self.held
        n = min(n, len(values))
        self.handed.extend(values[:n])
        self.held = (values[n:], ids.tail(runs, len(values) - n)) if n < len(values) else None


def _copies_refused(popped: Any, args: list[Any]) -> bool:
    """Whether a give-back ``args`` of what a pop answering ``popped`` handed out names an
    id twice, or a value other than the pop's first copy of its id (a producer gave it
    back twice: :mod:`.doubled_give_backs`)."""
    first: dict[int, Any] = {}
    for (i, _), value in zip(ids.expand(popped[1]), popped[0], strict=True):
        first.setdefault(i, value)
    named = list(zip(ids.expand(args[2]), args[1], strict=True))
    return len({i for (i, _), _ in named}) < len(named) or any(
        first.get(i, value) != value for (i, _), value in named)

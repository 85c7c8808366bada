"""Pops through a member's own ``Driver.call``, whose callers are cancelled at bad times.

:class:`CancellingConsumer` pops the queue as an application embedded in a member does:
through :meth:`Driver.call <lazily_queue.raft.driver.Driver.call>` with a give-back as
``on_orphan`` (the queue storage's: the elements go back to the head). The real
:meth:`~lazily_queue.raft.driver.Driver.propose` and ``Driver.call`` run on a
:class:`DriverShim` holding the member's replica and pipeline; the call's coroutine is
stepped by the simulation (its future belongs to no running loop), each resumption in a
loop turn of its own. An idle member is stepped at once (``step_now``): a member alone
with inline fsyncs commits the pop before ``propose`` returns. The caller is cancelled

- in the turn its result is ready, before it takes it (the call's first turn when the
  pop committed inside ``propose``, as ``pop(timeout=0)`` on a member alone);
- while it waits, at a random time or just before a step of its member: as
  ``Task.cancel`` does, its future is cancelled at once and the coroutine gets the
  ``CancelledError`` in the next turn. The replica orphans the pop, or the step in
  between applies it and its completion meets the cancelled future.

Once the run drains it only finishes what it holds (the other consumers empty the
queue), and its callers are no longer cancelled.
A batch pop (up to eight, like a prefetching iterator) whose caller took it may stop
after a few and give the rest back (``QUEUE_UNPOP_STAMPED``).

Checked by :func:`~.given_back.check_given_back`: a pop the log applied for this
client, taking elements, either reached its caller or was handed to ``on_orphan``,
unless its member restarted since the pop was issued (a crash loses what the member held
for its callers); and the give-back ``on_orphan`` proposed applied, unless its member
restarted, its proposal failed with an error other than one saying it did not apply
(those go again, as the queue storage's), or a later attempt follows it
(:func:`~.given_back.check_orphan_give_backs`: one fenced off, answered "duplicate",
lost its elements unseen).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from lazily_queue.core import ids
from lazily_queue.raft.driver import Driver
from lazily_queue.raft.errors import NodeNotRunning, StorageUnavailable
from lazily_queue.raft.proposals import Proposal
from lazily_queue.replicated import ops as C
from lazily_queue.storage.give_backs import RETRY_FIRST, RETRY_MAX, transient

from .client import FAILED, OK, QUEUE, UNKNOWN, Observed, _clean
from .history import Violation
from .workload import Consumer

if TYPE_CHECKING:
    from .cluster import Cluster

#: The share of turns with a result ready in which the caller is cancelled instead.
CANCEL_READY = 0.35
#: The share of calls whose caller is cancelled at a random time while it waits.
CANCEL_WAITING = 0.25
#: The chance, at each step of its member while a pop is in flight, that its caller is
#: cancelled just before the step (the step may apply the pop).
CANCEL_IN_STEP = 0.1
Completion = Callable[[Any, BaseException | None], None]


class _Loop:
    """What an asyncio future needs of its loop (nothing runs on it); keeps the future
    the driver created."""

    def __init__(self) -> None:
        self.future: asyncio.Future[Any] | None = None

    def get_debug(self) -> bool:
        return False

    def call_soon(self, *_args: Any, **_kwargs: Any) -> None:
        return None

    def call_exception_handler(self, _context: dict[str, Any]) -> None:
        return None

    def create_future(self) -> asyncio.Future[Any]:
        self.future = asyncio.Future(loop=cast(asyncio.AbstractEventLoop, self))
        return self.future


@dataclass
class DriverObserved(Observed):
    """An op issued through ``Driver.call``: the member's incarnation then."""

    incarnation: int = 0


class _ReplicaShim:
    """The replica as the driver calls it; notes the proposal and its completions."""

    def __init__(self, call: _Call) -> None:
        self.call = call

    def propose(self, code: int, args: list[Any], *, timeout: float, on_done: Completion,
                on_orphan: Callable[[Any], None] | None,
                encoded: bytes | None = None) -> Proposal:
        call = self.call

        def completed(result: Any, error: BaseException | None) -> None:
            fut = call.loop.future
            if fut is not None and fut.cancelled() and error is None:
                call.owner.met_cancelled += 1  # applied as its caller went away
            on_done(result, error)  # the driver's own completion (resolves its future)
            call.ready()

        replica = call.cluster.nodes[call.node].replica
        assert replica is not None
        p = replica.propose(code, args, timeout=timeout, on_done=completed, on_orphan=on_orphan,
                            encoded=encoded)
        call.proposed(p, completed)
        return p

    def cancel(self, p: Proposal) -> None:
        replica = self.call.cluster.nodes[self.call.node].replica
        if replica is not None:
            replica.cancel(p)


class DriverShim:
    """What :meth:`Driver.propose` and :meth:`Driver.call` use of a driver, on a member."""

    def __init__(self, call: _Call) -> None:
        node = call.cluster.nodes[call.node]
        self._call = call
        self._running = node.replica is not None
        self._loop = call.loop
        self._input = False
        self.pipeline = node.pipeline
        self.replica = _ReplicaShim(call)
        self.step_errors = 0

    def check_loop(self) -> None:
        """The simulation steps its calls on no running loop: nothing to check."""

    def propose(self, code: int, args: list[Any], **kwargs: Any) -> Any:
        return Driver.propose(cast(Driver, self), code, args, **kwargs)

    def _stall_text(self, outcome: str) -> str:
        return f"node {self._call.node} {self.pipeline.stall} ({outcome})"

    def _idle(self) -> bool:
        return self._call.cluster.idle(self._call.node)

    def _step(self) -> None:
        try:
            self._call.cluster.step_now(self._call.node)
        except Violation as exc:  # the driver would log a failed step: keep it for the run
            self._call.violation = exc

    def wake(self) -> None:
        self._call.cluster.wake(self._call.node)

    def _observe_call(self, *_args: Any) -> None:
        return None

    def _abandon(self, *args: Any) -> None:
        Driver._abandon(cast(Driver, self), *args)

    def _yield_now(self, _now: float) -> bool:
        return True  # every call yields: its caller may be cancelled in that turn


class _Call:
    """One ``Driver.call`` of a pop: its coroutine, stepped turn by turn."""

    def __init__(self, owner: CancellingConsumer, code: int, args: list[Any],
                 timeout: float) -> None:
        self.owner = owner
        self.cluster = owner.sim
        self.node = owner.node
        self.loop = _Loop()
        self.obs: DriverObserved | None = None
        self.completion: Completion | None = None
        self.proposal: Proposal | None = None
        self.violation: Violation | None = None
        self.finished = False
        self.abandoned = False
        self.running = False
        self.cancelling = False
        #: What the coroutine awaits: ``None`` (``asyncio.sleep(0)``) or the future.
        self.waiting: Any = None
        shim = cast(Driver, DriverShim(self))
        self.coro: Coroutine[Any, Any, Any] = Driver.call(
            shim, code, args, timeout=timeout, on_orphan=self.orphan)

    def proposed(self, p: Proposal, completion: Completion) -> None:
        owner, c = self.owner, self.cluster
        self.proposal, self.completion = p, completion
        obs = DriverObserved(owner.cid, self.node, c.session_of(self.node), p.seq, p.code,
                             list(p.args), c.now(), polling=True,
                             incarnation=c.nodes[self.node].incarnation)
        self.obs = owner.current = obs
        owner.ops.append(obs)
        c.track(self.node, owner, obs, p)

    def start(self, cancel_after: float | None) -> None:
        if cancel_after is not None:
            self.cluster.at(self.cluster.now() + cancel_after, self.cancel_waiting)
        self._advance(False)
        if not self.finished and self.waiting is None:
            self.owner.stepped_now += 1  # applied inside propose (step_now)

    def ready(self) -> None:
        """The driver's future is resolved (or cancelled): the coroutine runs next turn."""
        if not self.finished:
            self.cluster.at(self.cluster.now(), self._turn)

    def _turn(self) -> None:
        if self.finished or self.cancelling:
            return
        cancel = not self.owner.draining and self.owner.rng.random() < CANCEL_READY
        fut = self.loop.future
        if cancel and fut is not None and fut.done() and not fut.cancelled() and (
                fut.exception() is None):
            result = fut.result()
            if isinstance(result, list) and result and result[0]:
                self.owner.cancelled_ready += 1  # it took elements: they must go back
        self._advance(cancel)

    def cancel_waiting(self) -> None:
        """The caller's task is cancelled while its future is pending: ``Task.cancel``
        cancels that future at once and throws into the coroutine in the next turn
        (steps may run between: a completion then meets a cancelled future)."""
        waiter = self.waiting
        if self.finished or self.cancelling or not isinstance(waiter, asyncio.Future) or (
                waiter.done()):
            return
        self.cancelling = True
        self.owner.cancelled_waiting += 1
        waiter.cancel()
        self.cluster.at(self.cluster.now(), self._cancelled)

    def _cancelled(self) -> None:
        if not self.finished:
            self._advance(True)

    def _advance(self, cancel: bool) -> None:
        owner = self.owner
        self.running = True
        try:
            self.waiting = (self.coro.throw(asyncio.CancelledError()) if cancel
                            else self.coro.send(None))
        except StopIteration as stop:
            self._finish(OK, stop.value)
        except asyncio.CancelledError:
            self._finish(UNKNOWN, "cancelled")
        except Exception as exc:
            p = self.proposal
            if p is None and not isinstance(exc, NodeNotRunning | StorageUnavailable):
                raise
            self._finish(FAILED if p is None or _clean(p, exc) else UNKNOWN,
                         type(exc).__name__)
        else:
            if self.abandoned:
                self.coro.close()
                self.finished = True
            elif self.waiting is None:  # asyncio.sleep(0): the next turn
                self.ready()
        self.running = False  # (also when it raised)
        if self.violation is not None:
            raise self.violation
        if owner.pending is self and self.finished:
            owner.pending = None

    def _finish(self, outcome: str, result: Any) -> None:
        self.finished = True
        owner, obs = self.owner, self.obs
        owner.busy = False
        if obs is None:
            return
        if self.completion is not None:
            self.cluster.untrack(self.node, self.completion)
        if obs.outcome:  # its member crashed meanwhile: the cluster noted it
            return
        obs.outcome, obs.result = outcome, result
        self.cluster.observed(obs)
        if outcome == OK:
            owner.took(obs)

    def orphan(self, result: Any) -> None:
        """``on_orphan``: the caller went away; the elements go back to the head."""
        obs = self.obs
        if obs is None:
            return
        obs.orphan_result, obs.has_orphan_result = result, True
        self.cluster.observed(obs)
        if isinstance(result, list) and result and result[0]:
            self.owner.given_back += 1
            self.owner.give_back_orphan(obs.node, list(result[0]), list(result[1]))


@dataclass
class OrphanGiveBack:
    """A give-back proposed by ``on_orphan``: where, under which member session and
    number, and what became of its proposal."""

    node: str
    incarnation: int
    session: int
    seq: int
    values: list[Any]
    error: str = ""
    result: Any = None
    answered: bool = False
    #: It failed without applying (see ``give_backs.transient``).
    transient: bool = False
    #: ... and was proposed again (a later entry).
    retried: bool = False


class CancellingConsumer(Consumer):
    """Pops through ``Driver.call`` and is cancelled at bad times (module docstring)."""

    kind = "cancelling-consumer"

    def __init__(self, cid: str, cluster: Cluster, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.sim = cluster
        self.pending: _Call | None = None
        cluster.step_hooks.append(self._before_step)
        self.cancelled_ready = 0
        self.cancelled_waiting = 0
        self.met_cancelled = 0
        self.stepped_now = 0
        self.given_back = 0
        #: The give-backs its ``on_orphan`` proposed (as the queue storage's does).
        self.orphan_give_backs: list[OrphanGiveBack] = []
        #: What :func:`~.given_back.check_orphan_give_backs` found: applied, restarted, failed.
        self.orphans_seen: dict[str, int] = {}
        #: Those its member could not take as it was not running: lost with a log line.
        self.unproposed = 0
        #: Give-backs proposed again after one failed without applying.
        self.retried = 0

    def give_back_orphan(self, node: str, values: list[Any], runs: list[Any],
                         pause: float = RETRY_FIRST) -> None:
        """Propose the give-back of ``values`` (``runs``: their ids) on ``node`` with
        nobody waiting, as the queue storage's ``_return_orphan`` does
        (:mod:`lazily_queue.storage.give_backs`): one that fails without applying, or
        that its member cannot take while its disk stalls, goes again after ``pause``
        (doubling), while the member runs the same process."""
        sim = self.sim
        incarnation = sim.nodes[node].incarnation
        entry = OrphanGiveBack(node, incarnation, sim.session_of(node), 0, values)

        def again() -> None:
            if sim.nodes[node].incarnation == incarnation and sim.running(node):
                self.give_back_orphan(node, values, runs, min(RETRY_MAX, pause * 2))

        def done(result: Any, error: BaseException | None) -> None:
            entry.answered, entry.result = True, result
            entry.error = "" if error is None else type(error).__name__
            entry.transient = error is not None and transient(error)
            if entry.transient:
                entry.retried = True
                self.retried += 1
                sim.at(sim.now() + pause, again)

        p = sim.propose(self, node, C.QUEUE_UNPOP_STAMPED, [QUEUE, values, runs],
                        timeout=3600.0, on_done=done, on_orphan=lambda _r: None)
        if p is None:
            if sim.running(node):  # its disk stalls: StorageUnavailable, not applied
                self.retried += 1
                sim.at(sim.now() + pause, again)
            else:
                self.unproposed += 1
            return
        entry.seq = p.seq
        self.orphan_give_backs.append(entry)

    def next_op(self) -> None:
        if self.give_back is None and self.draining:
            return  # the other consumers empty the queue
        if self.give_back is not None or self.sim.nodes[self.node].stalled:
            super().next_op()  # the rest of a batch goes back (or a plain pop)
            return
        n = self.rng.randrange(2, 9) if self.rng.random() < 0.4 else 1
        timeout = self.rng.uniform(0.5, 3.0)
        cancel_after = (self.rng.uniform(0.0, timeout) if self.rng.random() < CANCEL_WAITING
                        else None)
        self.pending = _Call(self, C.QUEUE_POP_STAMPED, [QUEUE, n], timeout)
        self.busy = True
        self.pending.start(cancel_after)

    def _before_step(self, n: str) -> None:
        """Before a step of ``n``: the caller of a pop in flight there may be cancelled
        (its future now, its task in the next turn; the step may apply the pop)."""
        call = self.pending
        if call is None or call.node != n or call.finished or self.draining:
            return
        p = call.proposal
        if p is not None and p.in_flight and self.rng.random() < CANCEL_IN_STEP:
            call.cancel_waiting()

    def took(self, obs: Observed) -> None:
        """A batch handed over may be cut short: the rest goes back to the head."""
        result = obs.result
        if isinstance(result, list) and len(result[0]) > 1 and self.rng.random() < 0.3:
            values, runs = result
            keep = self.rng.randrange(1, len(values))
            self.give_back = (values[keep:], ids.tail(runs, len(values) - keep))

    def lost(self, obs: Observed) -> None:
        call = self.pending
        if call is not None and call.obs is obs:
            call.abandoned = True
            if not call.running:  # suspended: close it now (else when it yields)
                call.coro.close()
                call.finished = True

"""Queue push options combined, and delayed queue elements, in the simulation.

:class:`OptionsClient` works a queue of its own (:data:`OPTIONS_QUEUE`): it pushes with
random combinations of ``msg_id`` (now and then an id it used before: a retry),
``headers``, ``ttl_ms`` and a delivery time (``delay_ms`` or ``not_before_ms``)
through ``QUEUE_PUSH_OPTIONS``, plain pushes, and pops with headers, through whichever
member it is on, under every fault; the leader's maintenance promotes due elements
(``QUEUE_PROMOTE``) and sweeps expired ones. The checker replays its ops through
:class:`OptionsModel`, an independent model of the contract: a delayed element is
poppable from the first entry stamped at or after its due time (it joins the tail at the
first pop, options push or promotion at or after it, in (due, commit) order); a pop
never hands out an element before its due time nor at or after its deadline (push
stamp + ttl); a repeated ``msg_id`` applies nothing; headers travel with their element.
Any result or final state that is not the model's fails the run.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from typing import Any

from lazily_queue.core.queue import QueuePopError
from lazily_queue.replicated import ops as C

from .client import OK, Client, Host, Observed
from .expiry import DeclaredQueueModel, sweep_limit
from .history import AppliedOp, Violation

#: The queue the options client works (not the checker's main queue).
OPTIONS_QUEUE = "q-opts"

#: ``(id, value, deadline | None, headers | None)``.
Element = tuple[int, Any, int | None, dict[str, str] | None]


class OptionsClient(Client):
    """Declares :data:`OPTIONS_QUEUE`, then pushes with options combined (and plain),
    pops up to four at once with headers and sometimes proposes a promotion."""

    kind = "options-client"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.declared = False
        self.n = 0
        self.ids: list[str] = []

    def next_op(self) -> None:
        if self.draining or not self.declared:
            self.stopped = self.declared  # draining stops it once it has declared its queue
            if not self.declared:
                self.call(C.QUEUE_DECLARE, [OPTIONS_QUEUE, None], self._declared)
            return
        roll = self.rng.random()
        if roll < 0.5:
            self.call(C.QUEUE_PUSH_OPTIONS, [OPTIONS_QUEUE, *self._options()], _ignore)
        elif roll < 0.6:
            self.n += 1
            self.call(C.QUEUE_PUSH, [OPTIONS_QUEUE, f"{self.cid}:{self.n}"], _ignore)
        elif roll < 0.95:
            self.call(C.QUEUE_POP_HEADERS, [OPTIONS_QUEUE, self.rng.randint(1, 4)], _ignore)
        else:
            self.call(C.QUEUE_PROMOTE, [OPTIONS_QUEUE], _ignore)

    def _options(self) -> list[Any]:
        rng = self.rng
        self.n += 1
        options: dict[str, Any] = {}
        if rng.random() < 0.4:
            if self.ids and rng.random() < 0.3:
                options["msg_id"] = rng.choice(self.ids)  # a retry: applies nothing
            else:
                options["msg_id"] = f"{self.cid}:id{self.n}"
                self.ids.append(options["msg_id"])
        if rng.random() < 0.5:
            options["headers"] = {"n": str(self.n)}
        if rng.random() < 0.4:
            options["ttl_ms"] = rng.choice([20, 100, 400, 5_000])
        roll = rng.random()
        if roll < 0.5:
            options["delay_ms"] = rng.choice([0, 10, 60, 250, 800])
        elif roll < 0.6:
            options["not_before_ms"] = rng.choice([0, 1_000])  # long past: a ready push
        if not options:
            options["headers"] = {"n": str(self.n)}
        return [options, f"{self.cid}:{self.n}"]

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result is None:
            self.declared = True


def _ignore(_obs: Observed) -> None:
    return None


class OptionsModel(DeclaredQueueModel):
    """The options queue as the contract states it (module docstring)."""

    queue = OPTIONS_QUEUE
    DEADLINE = 2

    def __init__(self) -> None:
        super().__init__()
        self.ready: deque[Element] = deque()
        #: ``(due, id, value, deadline, headers)``, a heap.
        self.delayed: list[tuple[int, int, Any, int | None, dict[str, str] | None]] = []
        self.next_id = 0
        self.applied_ids: set[str] = set()
        self.delivered = 0
        self.delivered_delayed = 0
        self.repeats = 0
        self.was_delayed: set[int] = set()

    def apply(self, op: AppliedOp, now: int) -> None:
        """Apply ``op`` (on :data:`OPTIONS_QUEUE`) at leader time ``now``, checking it."""
        code, args = op.code, op.args
        if self.gated(op):
            return
        if code in (C.QUEUE_PUSH, C.QUEUE_PUSH_OPTIONS):
            plain = code == C.QUEUE_PUSH  # a plain push makes nothing due
            self._push({} if plain else args[1], args[-1], now, not plain)
            op.expect(None)
        elif code in (C.QUEUE_PROMOTE, C.EXPIRE):
            op.expect(self._promote(now) if code == C.QUEUE_PROMOTE
                      else self.expire_from(self.ready, now, sweep_limit(args)))
        elif code == C.QUEUE_POP_HEADERS:
            self._promote(now)
            self._pop(op, args[1], now)
        else:
            raise Violation(f"index {op.index}: unexpected {C.op_name(code)} on "
                            f"{self.queue}")

    def _push(self, options: dict[str, Any], value: Any, now: int, promote: bool) -> None:
        if promote:
            self._promote(now)
        msg_id = options.get("msg_id")
        if msg_id is not None:
            if msg_id in self.applied_ids:
                self.repeats += 1
                return
            self.applied_ids.add(msg_id)
        due = (now + options["delay_ms"] if "delay_ms" in options
               else options.get("not_before_ms"))
        ttl = options.get("ttl_ms")
        self._add(value, None if due is None or due <= now else due,
                  None if ttl is None else now + ttl, options.get("headers"))

    def _add(self, value: Any, due: int | None, deadline: int | None,
             headers: dict[str, str] | None) -> None:
        element_id = self.next_id
        self.next_id += 1
        if due is None:
            self.ready.append((element_id, value, deadline, headers))
        else:
            self.was_delayed.add(element_id)
            heapq.heappush(self.delayed, (due, element_id, value, deadline, headers))

    def _promote(self, now: int) -> int:
        n = 0
        while self.delayed and self.delayed[0][0] <= now:
            _, element_id, value, deadline, headers = heapq.heappop(self.delayed)
            self.ready.append((element_id, value, deadline, headers))
            n += 1
        return n

    def _pop(self, op: AppliedOp, n: int, now: int) -> None:
        taken: list[Element] = self.take_live(self.ready, n, now)
        result = op.result
        if not taken:
            op.expect(QueuePopError.Empty)
            return
        if isinstance(result, QueuePopError) or type(result) is not list or len(result) != 3:
            raise Violation(f"index {op.index}: pop of {self.queue} returned "
                            f"{result!r:.80}, the model says {[e[1] for e in taken]!r:.80}")
        values = [e[1] for e in taken]
        if result[0] != values:
            what = ("an element before its due time" if any(
                v not in values for v in result[0]) else "other elements")
            raise Violation(f"index {op.index}: a pop at {now} delivered {what}: "
                            f"{result[0]!r:.80}, the model says {values!r:.80}")
        headers = [[e[0], e[3]] for e in taken if e[3]]
        if result[2] != headers:
            raise Violation(f"index {op.index}: a pop's headers {result[2]!r:.80} are not "
                            f"the model's {headers!r:.80}")
        self.delivered += len(values)
        self.delivered_delayed += sum(1 for e in taken if e[0] in self.was_delayed)

    def check_final(self, state: dict[str, Any]) -> None:
        """A replica's final options queue (ready and delayed) is the model's."""
        if not self.declared:
            return
        queue = state.get("queues", {}).get(self.queue)
        elements = [] if queue is None else queue[2]
        if elements != [e[1] for e in self.ready]:
            raise Violation(f"{self.queue} holds {elements!r:.100}, the model "
                            f"{[e[1] for e in self.ready]!r:.100}")
        delayed = state.get("queue_options", {}).get(self.queue, [])
        model = [[due, i, value] for due, i, value, _, _ in sorted(self.delayed)]
        if [[e[0], e[1], e[3]] for e in delayed] != model:
            raise Violation(f"{self.queue} has delayed {delayed!r:.100}, the model "
                            f"{model!r:.100}")

"""Message headers in the simulation: producers pushing with headers, consumers popping
and giving back with them, and the checker's model of who holds headers.

A header producer pushes every other value with headers derived from the value
(:func:`headers_for`), so the checker knows what each element must carry: a message pop
(``QUEUE_POP_HEADERS``) must return, for each element it takes, exactly the headers it
was pushed (or last given back) with, and none for an element without. A plain pop takes
an element's headers away with it; a give-back with headers (``QUEUE_UNPOP_HEADERS``)
puts them back. The replicas' final header tables must hold exactly the elements the
model says carry headers.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from lazily_queue.core import ids
from lazily_queue.core.queue import QueuePopError
from lazily_queue.replicated import ops as C

from .client import FAILED, OK, QUEUE, Client, Host, Observed
from .history import AppliedOp, Violation


def headers_for(value: Any) -> dict[str, str]:
    """The headers a header producer pushes ``value`` with."""
    return {"of": str(value), "trace": f"t-{len(str(value))}"}


class HeaderProducer(Client):
    """Pushes unique values to the queue, every other one with headers."""

    kind = "header-producer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0

    def next_op(self) -> None:
        if self.draining:
            self.stopped = True
            return
        self.n += 1
        value = f"{self.cid}:{self.n}"
        if self.n % 2:
            self.call(C.QUEUE_PUSH_HEADERS, [QUEUE, headers_for(value), None, value],
                      lambda _obs: None)
        else:
            self.call(C.QUEUE_PUSH, [QUEUE, value], lambda _obs: None)


class HeaderConsumer(Client):
    """Pops up to four elements with their headers; a share of its takes stop early and
    give the rest back with their headers (a pop whose waiter gave up does the same)."""

    kind = "header-consumer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.give_back: list[Any] | None = None

    def next_op(self) -> None:
        if self.give_back is not None:
            args, self.give_back = self.give_back, None
            self.call(C.QUEUE_UNPOP_HEADERS, args, self._gave_back)
            return
        self.call(C.QUEUE_POP_HEADERS, [QUEUE, self.rng.randrange(1, 5)], self._popped,
                  timeout=self.rng.uniform(0.5, 3.0), orphan=self._orphan, polling=True)

    def _popped(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome == OK and isinstance(result, list) and len(result[0]) > 1:
            if self.rng.random() < 0.4:
                self.give_back = _rest(result, self.rng.randrange(1, len(result[0])))

    def _gave_back(self, obs: Observed) -> None:
        if obs.outcome == FAILED:
            self.give_back = list(obs.args)

    def _orphan(self, obs: Observed, result: Any) -> None:
        if isinstance(result, list) and result[0]:
            self.cluster.propose_detached(obs.node, C.QUEUE_UNPOP_HEADERS,
                                          _rest(result, 0))


def _rest(result: list[Any], keep: int) -> list[Any]:
    """The ``QUEUE_UNPOP_HEADERS`` args giving back all but the first ``keep`` taken."""
    values, runs, headers = result
    back = ids.tail(runs, len(values) - keep)
    given = {i for i, _ in ids.expand(back)}
    return [QUEUE, values[keep:], back, [h for h in headers if h[0] in given]]


class HeaderModel:
    """Which queued values carry headers (as a count per value: retried pushes may queue
    a value twice), checked against every op that moves elements."""

    def __init__(self) -> None:
        self.held: Counter[Any] = Counter()
        self.checked = 0

    def fail(self, text: str) -> None:
        raise Violation(text)

    def pushed(self, op: AppliedOp) -> None:
        """A ``QUEUE_PUSH_HEADERS`` the queue accepted."""
        value = op.args[3]
        if op.args[1] != headers_for(value):
            self.fail(f"index {op.index}: pushed {value!r} with foreign headers")
        self.held[value] += 1

    def popped(self, op: AppliedOp, taken: list[Any]) -> None:
        """Elements ``taken`` by a pop; a message pop's result must carry their headers."""
        if op.code != C.QUEUE_POP_HEADERS:
            for value in taken:  # the headers leave with the element
                if self.held[value]:
                    self.held[value] -= 1
            return
        result = op.result
        if isinstance(result, QueuePopError):
            return
        by_id = {i: h for i, h in result[2]}
        for value, (i, _) in zip(taken, ids.expand(result[1]), strict=True):
            got = by_id.pop(i, None)
            if self.held[value]:
                self.held[value] -= 1
                if got != headers_for(value):
                    self.fail(f"index {op.index}: {value!r} (id {i}) came with headers "
                              f"{got!r}, pushed with {headers_for(value)!r}")
                self.checked += 1
            elif got is not None:
                self.fail(f"index {op.index}: {value!r} (id {i}) came with headers {got!r} "
                          "it was never pushed with")
        if by_id:
            self.fail(f"index {op.index}: headers for ids {sorted(by_id)} nobody took")

    def given_back(self, op: AppliedOp) -> None:
        """A ``QUEUE_UNPOP_HEADERS`` applied: its elements carry their headers again."""
        values, runs, headers = op.args[1], op.args[2], op.args[3]
        by_id = {i: h for i, h in headers}
        for value, (i, _) in zip(values, ids.expand(runs), strict=True):
            if i in by_id:
                if by_id[i] != headers_for(value):
                    self.fail(f"index {op.index}: {value!r} given back with foreign headers")
                self.held[value] += 1

    def check_final(self, elements: list[Any], table: Any) -> None:
        """The replica's header table (``[[id, headers], ...]``) against the model."""
        carried = Counter(h["of"] for _, h in (table or []))
        expected = +self.held
        if carried != expected:
            self.fail(f"the queue's headers cover {dict(carried)!r:.200}, the model "
                      f"{dict(expected)!r:.200}")
        missing = set(carried) - set(elements)
        if missing:
            self.fail(f"headers kept for elements no longer queued: {sorted(missing)[:5]}")

"""The message ids and enqueue stamps of the simulated queue, checked against the log.

A model beside the checker's queue: each push takes the next id and the leader time of
its entry; a stamped pop (``QUEUE_POP_STAMPED``) must answer exactly the ids and stamps
of the elements it takes, none stamped later than the pop; a stamped give-back
(``QUEUE_UNPOP_STAMPED``) must return each element under the id and stamp it was
pushed with, a copy of it handed out and not given back since: no id is in the queue
more often than it was pushed, but where a doubling producer (its ``doubling``
session) gave it back more often than it took it, each copy once (and may have given a
copy another value: :mod:`.doubled_give_backs`). The older give-backs
(``QUEUE_UNPOP(_MANY)``) number elements afresh (their stamp is not checked).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Collection
from typing import Any

from lazily_queue.core import ids

from .history import AppliedOp, Violation

#: ``(id, stamp)``; the stamp is ``None`` where the model does not predict it.
Tag = tuple[int, int | None]


class QueueIdModel:
    """Ids and stamps of the elements of the model queue, in FIFO order."""

    def __init__(self, doubling: Collection[int] = ()) -> None:
        self.next_id = 0
        self.tags: deque[Tag] = deque()
        self.pushed: dict[int, tuple[Any, int | None]] = {}
        self.checked_pops = 0
        self.doubling = frozenset(doubling)
        #: Per id, its copies handed out and not given back; of those, per ``(session,
        #: id)``, a doubling session's.
        self.out: Counter[int] = Counter()
        self.own: Counter[tuple[int, int]] = Counter()
        #: Per id, the other values a doubling session gave it back with.
        self.forged: dict[int, set[Any]] = {}

    def _fresh(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def push(self, value: Any, now: int) -> None:
        i = self._fresh()
        self.tags.append((i, now))
        self.pushed[i] = (value, now)

    def unpop_fresh(self, values: list[Any]) -> None:
        for value in reversed(values):
            i = self._fresh()
            self.tags.appendleft((i, None))
            self.pushed[i] = (value, None)  # a new id, its stamp the replica's to pick

    def pop(self, op: AppliedOp, count: int, now: int, stamped: bool) -> None:
        taken = [self.tags.popleft() for _ in range(count)]
        doubling = op.session in self.doubling
        for i, stamp in taken:
            self.out[i] += 1
            if doubling:
                self.own[op.session, i] += 1
            if stamp is not None and stamp > now:
                raise Violation(f"index {op.index}: element {i} enqueued at {stamp}, after "
                                f"its delivery at {now}")
        if not stamped:
            return
        got = list(ids.expand(op.result[1]))
        if [i for i, _ in got] != [i for i, _ in taken] or any(
                want is not None and stamp != want for (_, stamp), (_, want) in zip(
                    got, taken, strict=True)):
            raise Violation(f"index {op.index}: the pop answered ids {got!r:.120}, the model "
                            f"{taken!r:.120}")
        self.checked_pops += 1

    def unpop_stamped(self, op: AppliedOp, values: list[Any], runs: list[Any]) -> None:
        back = list(ids.expand(runs))
        doubling = op.session in self.doubling
        for (i, stamp), value in zip(back, values, strict=True):
            first = self.pushed.get(i)
            if first is None or first[1] not in (None, stamp) or not (
                    first[0] == value or doubling or value in self.forged.get(i, ())):
                raise Violation(f"index {op.index}: element {value!r:.40} given back as id "
                                f"{i} stamp {stamp}, pushed as {first!r:.60}")
            if doubling and value != first[0]:
                self.forged.setdefault(i, set()).add(value)
            if doubling and not self.own[op.session, i]:
                continue  # a copy more
            if not self.out[i]:
                raise Violation(f"index {op.index}: element {value!r:.40} given back as id "
                                f"{i} stamp {stamp}, no copy of which was handed out")
            self.out[i] -= 1
            if doubling:
                self.own[op.session, i] -= 1
        self.tags.extendleft(reversed(back))

    def check_final(self, state: Any) -> None:
        """``state``: a replica's ``[next_id, runs]`` of the queue."""
        got = [i for i, _ in ids.expand(state[1])] if state else []
        if got != [i for i, _ in self.tags] or (state and state[0] != self.next_id):
            raise Violation(f"queue ids {got!r:.100} differ from the model "
                            f"{[i for i, _ in self.tags]!r:.100}")

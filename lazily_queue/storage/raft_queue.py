"""RaftQueueStorage: a QueueCell backend whose FIFO is the replicated state machine's.

Reads (``len``, ``peek``, ``is_closed``) show this node's locally applied state (through
its :class:`~lazily_queue.replicated.view.ReadView`), which on a follower may trail the
leader. Mutations are proposals: ``offer`` / ``poll`` / ``close`` return once the
operation is committed on a majority and applied here. Capabilities: ``observable``,
``peek``, ``lifecycle`` (once the node stops, waiting and new calls fail with
``NodeNotRunning``), ``dedup``, ``messages``, ``headers``, ``expiry`` and ``scheduling``
(a push with options is one ``QUEUE_PUSH_OPTIONS``), ``limits`` when declared with
them; there is no synchronous surface. Every committed transition on any node
reaches the shell through the change listener, so readers on every node update as
entries apply.

Capacity and limits are checked when the push is applied, in log order, against the
committed state plus everything ordered before it (delayed elements counted under
``reject`` limits): the log is the serialization point, so a
bounded queue can never be overcommitted. A pop whose caller went away (cancelled or
timed out) before its result arrived returns the element to the head of the queue
(proposed again until it applies: :mod:`.give_backs`), under its message id
(capability ``messages``: pops are ``QUEUE_POP_STAMPED`` and answer ids and leader
stamps, give-backs carry them back).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core.expiry import ttl_ms
from ..core.fifo import Fifo
from ..core.ids import Run
from ..core.limited_fifo import LimitedFifo
from ..core.limits import REJECT, Limits
from ..core.push_options import PushOptions
from ..core.queue import EMPTY, RESET, QueuePopError, QueuePushError, validate_capacity
from ..replicated import ops as C
from ..replicated.events import QueueChanged
from .capabilities import StorageCapabilities
from .give_back_parts import give_back_parts
from .give_backs import Returns
from .queue import QueueChangeListener
from .replicated_object import Proposer, ReplicatedObject

if TYPE_CHECKING:
    from ..replicated.view import ReadView

log = logging.getLogger(__name__)

T = TypeVar("T")


class RaftQueueStorage(ReplicatedObject, Generic[T]):
    """A replicated FIFO: the QueueStorage seam, observable and peekable."""

    kind = "queue"
    expiry_kind = "queue"
    capabilities = StorageCapabilities(observable=True, peek=True, lifecycle=True, dedup=True,
                                       messages=True, headers=True, expiry=True,
                                       scheduling=True)

    def __init__(
        self, driver: Proposer, view: ReadView, name: str, *, capacity: int | None = None,
        timeout: float = 10.0, ttl: float | None = None, limits: Limits | None = None,
    ) -> None:
        super().__init__(driver, view, name, timeout=timeout)
        if ttl is not None:
            self.expiry_rules = [ttl_ms(ttl), None]
        self._capacity = validate_capacity(capacity)
        self._limits = limits
        if limits is not None:  # declared with QUEUE_DECLARE_LIMITED; max_length bounds
            if capacity is not None:
                raise ValueError("give the bound as Limits(max_length=...) or capacity=, "
                                 "not both")
            self._capacity = limits.max_length if limits.overflow == REJECT else None
            self.capabilities = StorageCapabilities(
                observable=True, peek=True, lifecycle=True, dedup=True, messages=True,
                limits=True, headers=True, expiry=True, scheduling=True)
        self._listener: QueueChangeListener | None = None
        self.orphans_returned = 0
        #: The give-backs of pops whose callers went away, under way (made at the first).
        self.returns: Returns | None = None

    def __repr__(self) -> str:
        return f"RaftQueueStorage({self.name!r}, len={self.len()}, capacity={self._capacity})"

    def _declare_op(self) -> tuple[int, list[Any]]:
        if self._limits is not None:
            return C.QUEUE_DECLARE_LIMITED, [self.name, self._limits.doc()]
        return C.QUEUE_DECLARE, [self.name, self._capacity]

    def limits(self) -> Limits | None:
        return self._limits

    def limited_fifo(self) -> LimitedFifo[Any] | None:
        """The queue as applied here (``None`` before it is declared)."""
        q = self._state()
        return q if isinstance(q, LimitedFifo) else None

    def _state(self) -> Fifo[Any] | None:
        return self._view.queue(self.name)

    # -- local reads ----------------------------------------------------------------------

    def len(self) -> int:
        q = self._state()
        return 0 if q is None else q.len()

    def is_closed(self) -> bool:
        q = self._state()
        return False if q is None else q.is_closed()

    def peek(self) -> Any:
        q = self._state()
        return EMPTY if q is None else q.peek()

    def capacity(self) -> int | None:
        return self._capacity

    def elements(self) -> list[Any]:
        q = self._state()
        return [] if q is None else q.elements()

    # -- change listener ----------------------------------------------------------------

    def set_change_listener(self, listener: QueueChangeListener | None) -> None:
        self._listener = listener

    def on_event(self, event: QueueChanged) -> None:
        if self._listener is not None:
            self._listener(event.op, event.pre_len)

    def on_reset(self) -> None:
        if self._listener is not None:
            self._listener(RESET, self.len())

    # -- replicated operations -------------------------------------------------------------

    def check_values(self, values: list[T]) -> None:
        """Refuse a batch of pushes with a value the cluster would refuse (nothing sent)."""
        self.check_all(C.QUEUE_PUSH, lambda value: [self.name, value], values)

    async def offer_many(self, values: list[T], *,
                         timeout: float | None = None) -> list[QueuePushError | None]:
        """:meth:`offer` every value, proposed together (see ``_call_many``): a value the
        cluster would refuse refuses them all, before any is proposed."""
        results = await self._call_many(C.QUEUE_PUSH, lambda value: [self.name, value],
                                        values, timeout)
        return [result if isinstance(result, QueuePushError) else None for result in results]

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        result = await self._call(C.QUEUE_PUSH, [self.name, value], timeout)
        return result if isinstance(result, QueuePushError) else None

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        result = await self._call(C.QUEUE_PUSH_ONCE, [self.name, msg_id, value], timeout)
        return result if isinstance(result, QueuePushError) else None

    async def poll_headers(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run], list[list[Any]]] | QueuePopError:
        result = await self._call(C.QUEUE_POP_HEADERS, [self.name, n], timeout,
                                  on_orphan=self._return_orphan)
        if isinstance(result, QueuePopError):
            return result
        return result[0], result[1], result[2]

    async def unpoll_headers(
        self, values: list[T], runs: list[Run], headers: list[list[Any]], *,
        timeout: float | None = None,
    ) -> None:
        await self._give_back(values, runs, headers, timeout)

    async def offer_options(
        self, value: T, options: PushOptions, *, timeout: float | None = None
    ) -> QueuePushError | None:
        result = await self._call(C.QUEUE_PUSH_OPTIONS, [self.name, options.to_map(), value],
                                  timeout)
        return result if isinstance(result, QueuePushError) else None

    def delayed_len(self) -> int:
        q = self._state()
        return 0 if q is None else q.delayed_len()

    def next_due(self) -> int | None:
        q = self._state()
        return None if q is None else q.next_due()

    def delayed(self) -> list[tuple[int, int, Any]]:
        q = self._state()
        return [] if q is None else q.delayed()

    async def poll(self, *, timeout: float | None = None) -> T | QueuePopError:
        result = await self.poll_stamped(1, timeout=timeout)
        return result if isinstance(result, QueuePopError) else result[0][0]

    async def close(self, *, timeout: float | None = None) -> None:
        await self._call(C.QUEUE_CLOSE, [self.name], timeout)

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        result = await self.poll_stamped(n, timeout=timeout)
        return result if isinstance(result, QueuePopError) else result[0]

    async def poll_stamped(
        self, n: int, *, timeout: float | None = None
    ) -> tuple[list[T], list[Run]] | QueuePopError:
        result = await self._call(C.QUEUE_POP_STAMPED, [self.name, n], timeout,
                                  on_orphan=self._return_orphan)
        if isinstance(result, QueuePopError):
            return result
        return result[0], result[1]

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        await self._call(C.QUEUE_UNPOP_MANY, [self.name, list(values)], timeout)

    async def unpoll_stamped(
        self, values: list[T], runs: list[Run], *, timeout: float | None = None
    ) -> None:
        await self._give_back(values, runs, None, timeout)

    async def _give_back(self, values: list[T], runs: list[Run],
                         headers: list[list[Any]] | None, timeout: float | None) -> None:
        """Give ``values`` back to the head, in parts when one operation cannot carry
        them all (:mod:`.give_back_parts`)."""
        parts = give_back_parts(self.name, values, runs, headers, self._driver.encode)
        back = 0
        for code, args in reversed(parts):
            try:
                await self._call(code, args, timeout)
            except Exception as exc:
                if back:
                    exc.add_note(f"the give-back went in {len(parts)} parts, the last first: "
                                 f"the last {back} of its {len(values)} elements are back "
                                 "at the head, the others not")
                raise
            back += len(args[1])

    def _return_orphan(self, result: Any) -> None:
        """Give back what a pop whose caller went away took (``[values, runs]``, or
        ``[values, runs, headers]``: then with the headers), proposed again until it
        applies (:mod:`.give_backs`)."""
        if type(result) is not list or len(result) not in (2, 3) or not result[0]:
            return
        self.orphans_returned += len(result[0])
        log.info("queue %r: a pop's receiver went away; returning %d element(s) to the head",
                 self.name, len(result[0]))
        self._return(result[0], result[1], result[2] if len(result) == 3 else None)

    async def give_back_rest(self, values: list[T], runs: list[Run],
                             headers: list[list[Any]] | None) -> None:
        """Give back what an iteration took and did not hand out, as a pop's whose caller
        went away (proposed again until it applies); waits up to the storage's timeout
        for it, then leaves it going."""
        tasks = self._return(values, runs, headers)
        if tasks:
            await asyncio.wait(tasks, timeout=self.timeout)

    def _return(self, values: list[T], runs: list[Run],
                headers: list[list[Any]] | None) -> list[asyncio.Task[None]]:
        """Start giving ``values`` back with nobody waiting (:mod:`.give_backs`), in
        parts when one operation cannot carry them all, the last part first, each once
        the one after it applied."""
        try:
            parts = give_back_parts(self.name, values, runs, headers, self._driver.encode)
        except Exception as exc:  # one element alone too large: nothing can carry it
            log.error("queue %r: %d element(s) taken and not handed out cannot be given "
                      "back, and are lost: %s", self.name, len(values), exc)
            return []
        task = self._returning().start(parts[::-1])
        return [] if task is None else [task]

    def _returning(self) -> Returns:
        if self.returns is None:
            self.returns = Returns(self._driver, self.name)
        return self.returns

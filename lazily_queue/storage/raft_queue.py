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
timed out) before its result arrived returns the element to the head of the queue,
under its message id (capability ``messages``: pops are ``QUEUE_POP_STAMPED`` and answer
ids and leader stamps, give-backs carry them back).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from ..core.expiry import ttl_ms
from ..core.fifo import Fifo
from ..core.ids import Run
from ..core.limited_fifo import LimitedFifo
from ..core.limits import REJECT, Limits
from ..core.push_options import PushOptions
from ..core.queue import EMPTY, RESET, QueuePopError, QueuePushError, validate_capacity
from ..raft.errors import NodeNotRunning, ProposalRejected
from ..replicated import ops as C
from ..replicated.events import QueueChanged
from ..replicated.ops import OpError
from .capabilities import StorageCapabilities
from .queue import QueueChangeListener

if TYPE_CHECKING:
    from ..raft.driver import Driver
    from ..replicated.view import ReadView

log = logging.getLogger(__name__)

T = TypeVar("T")


class Proposer(Protocol):
    """Where a replicated storage's operations go: a member's driver, or a client's
    connection to a member. Results are the state machine's."""

    @property
    def running(self) -> bool:
        """False once stopped (a node) or closed (a client)."""
        ...

    def propose(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> tuple[Any, asyncio.Future[Any]]:
        """Propose one op without waiting; the future resolves with its result."""
        ...

    async def call(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
    ) -> Any:
        """Propose and await; ``on_orphan`` gets the result of an op whose caller went
        away (cancelled, timed out) while it may still apply."""
        ...


def raise_op_error(result: Any) -> Any:
    """Turn an :class:`OpError` result into :class:`ProposalRejected`; pass others through."""
    if isinstance(result, OpError):
        raise ProposalRejected(str(result))
    return result


class ReplicatedObject:
    """Shared plumbing of the Raft-backed storages: declaration, proposals through the
    driver and reads through the view."""

    kind = "object"

    #: The object's kind in expiry ops (``EXPIRY_RULES``), ``None``: it has no expiry.
    expiry_kind: str | None = None

    def __init__(self, driver: Proposer, view: ReadView, name: str, *, timeout: float) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        #: ``[default_ttl_ms, max_age_ms]`` proposed after the declaration, or ``None``.
        self.expiry_rules: list[int | None] | None = None
        self._expired_listener: Callable[[], None] | None = None
        self._driver = driver
        self._view = view
        self.name = name
        self.timeout = timeout
        self._declared: asyncio.Future[None] | None = None

    def _declare_op(self) -> tuple[int, list[Any]]:
        raise NotImplementedError

    def check_all(self, code: int, args: Callable[[Any], list[Any]],
                  values: list[Any]) -> None:
        """Raise what proposing ``code`` with ``args(value)`` would for any of ``values``
        (an unsupported value, a message too large) before any is proposed: a batch is
        refused whole, not after its first values applied."""
        check = getattr(self._driver, "check", None)
        if check is not None:
            for value in values:
                check(code, args(value))

    def rebind(self, driver: Proposer, view: ReadView) -> None:
        """Follow the node to a restarted driver and state (the cell and readers stay)."""
        self._driver = driver
        self._view = view
        self._declared = None

    def forget_declaration(self) -> None:
        """The object was deleted: the next operation declares it again."""
        self._declared = None

    def raise_if_stopped(self) -> None:
        """Raise :class:`NodeNotRunning` while the node is stopped (capability
        ``lifecycle``: a stopping node resets its storages, which wakes every waiter)."""
        if not self._driver.running:
            raise self._stopped()

    def _stopped(self) -> Exception:
        node = cast("Driver", self._driver).replica.node_id
        return NodeNotRunning(
            f"{self.kind} {self.name!r}: node {node} is stopped; start it again "
            "(`async with node:`) to use it"
        )

    async def declare(self, *, timeout: float | None = None) -> None:
        """Declare the object on the cluster now (the first operation does it otherwise)."""
        await self._ensure_declared(timeout)

    async def _ensure_declared(self, timeout: float | None) -> None:
        self.raise_if_stopped()
        declared = self._declared
        if (declared is not None and declared.done() and not declared.cancelled()
                and declared.exception() is None):
            return
        if self._declared is None or (self._declared.done() and self._declared.exception()):
            self._declared = asyncio.ensure_future(self._declare(timeout))
        await asyncio.shield(self._declared)

    async def _declare(self, timeout: float | None) -> None:
        code, args = self._declare_op()
        raise_op_error(await self._driver.call(code, args, timeout=timeout or self.timeout))
        if self.expiry_rules is not None and self.expiry_kind is not None:
            raise_op_error(await self._driver.call(
                C.EXPIRY_RULES, [self.name, self.expiry_kind, *self.expiry_rules],
                timeout=timeout or self.timeout))

    def expired_count(self) -> int:
        """Elements that expired undelivered (capability ``expiry``)."""
        return self._view.expired(self.expiry_kind or "", self.name)

    def set_expired_listener(self, listener: Callable[[], None] | None) -> None:
        self._expired_listener = listener

    def on_expired(self) -> None:
        """Elements of the object expired (an :class:`~..replicated.events.Expired`)."""
        if self._expired_listener is not None:
            self._expired_listener()

    async def _call(self, code: int, args: list[Any], timeout: float | None, **kw: Any) -> Any:
        declared = self._declared
        if (declared is None or not declared.done() or declared.cancelled()
                or declared.exception() is not None):
            await self._ensure_declared(timeout)
        elif not self._driver.running:
            raise self._stopped()
        result = await self._driver.call(code, args, timeout=timeout or self.timeout, **kw)
        return raise_op_error(result)


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
        await self._call(C.QUEUE_UNPOP_HEADERS, [self.name, list(values), runs, headers],
                         timeout)

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
        await self._call(C.QUEUE_UNPOP_STAMPED, [self.name, list(values), runs], timeout)

    def _return_orphan(self, result: Any) -> None:
        """Give back what a pop whose caller went away took (``[values, runs]``, or
        ``[values, runs, headers]``: then with the headers)."""
        if type(result) is not list or len(result) not in (2, 3):
            return
        code = C.QUEUE_UNPOP_STAMPED if len(result) == 2 else C.QUEUE_UNPOP_HEADERS
        self.orphans_returned += len(result[0])
        log.info("queue %r: a pop's receiver went away; returning %d element(s) to the head",
                 self.name, len(result[0]))

        def done(fut: asyncio.Future[Any]) -> None:
            err = None if fut.cancelled() else fut.exception()
            if err is not None:
                log.error("queue %r: could not return an undelivered element: %s", self.name, err)

        try:
            _, fut = self._driver.propose(
                code, [self.name, *result], timeout=3600.0,
                on_orphan=lambda _: None
            )
        except Exception as exc:
            log.error("queue %r: could not return an undelivered element: %s", self.name, exc)
            return
        fut.add_done_callback(done)

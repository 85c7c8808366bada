"""ReplicatedObject: what the Raft-backed storages share (declaration, proposals through
a :class:`Proposer`, reads through the view), and the :class:`Proposer` seam itself: a
member's driver or a client's connection to a member."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..raft.errors import NodeNotRunning, ProposalRejected, ResultNotKept
from ..replicated import ops as C
from ..replicated.ops import OpError
from .attempts import attempt_timeout
from .runs import MANY_AT_ONCE

if TYPE_CHECKING:
    from ..raft.driver import Driver
    from ..replicated.view import ReadView


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

    def check_loop(self) -> None:
        """Raise ``ThreadSafetyError`` unless called on the event loop the node or
        client runs on."""
        ...

    def owner(self) -> str:
        """The node or client, as errors name it (``node 1``, ``the client``)."""
        ...

    def encode(self, code: int, args: list[Any]) -> bytes:
        """The op as :meth:`call_many` takes it; raises what proposing it would
        (``UnsupportedValue``, ``MessageTooLarge``), proposes nothing."""
        ...

    async def call_many(
        self, code: int, args: list[list[Any]], encoded: list[bytes], *, timeout: float,
    ) -> list[Any]:
        """Propose ``code`` with each of ``args`` together and await them all (results in
        order; once all ended, the first failure raises)."""
        ...


def raise_op_error(result: Any) -> Any:
    """Turn an :class:`OpError` result into :class:`ProposalRejected` (:class:`ResultNotKept`
    for an op applied before whose result is no longer kept; unknown whether it applied
    for one under an ended client session); pass others through."""
    if isinstance(result, OpError):
        if result.code == "duplicate":
            raise ResultNotKept(str(result), applied=True)
        if result.code == "session_ended":  # a retry may have applied before the end
            raise ProposalRejected(str(result), applied=None)
        raise ProposalRejected(str(result), applied=False)
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

    def bound(self, timeout: float | None) -> float:
        """The bound of one op: :attr:`timeout` for ``None``, else ``timeout`` seconds
        (``0`` is zero: :mod:`.attempts`)."""
        return attempt_timeout(timeout, self.timeout)

    def check_all(self, code: int, args: Callable[[Any], list[Any]],
                  values: list[Any]) -> None:
        """Raise what proposing ``code`` with ``args(value)`` would for any of ``values``
        (an unsupported value, a message too large) before any is proposed: a batch is
        refused whole, not after its first values applied."""
        encode = self._driver.encode
        for value in values:
            encode(code, args(value))

    def check_loop(self) -> str:
        """Raise ``ThreadSafetyError`` unless called on the event loop of the node or
        client this object belongs to; return which one it is."""
        self._driver.check_loop()
        return self._driver.owner()

    def rebind(self, driver: Proposer, view: ReadView) -> None:
        """Follow the node to a restarted driver and state (the cell and readers stay)."""
        self._driver = driver
        self._view = view
        self._declared = None

    def forget_declaration(self) -> None:
        """The object was deleted: the next operation declares it again."""
        self._declared = None

    def declaration_refused(self) -> bool:
        """True when the cluster refused this object's declaration because the object
        exists with other settings (a ``*_mismatch`` refusal): no operation of it applies."""
        declared = self._declared
        if declared is None or not declared.done() or declared.cancelled():
            return False
        exc = declared.exception()
        return (isinstance(exc, ProposalRejected)
                and str(exc).split(":", 1)[0].endswith("_mismatch"))

    def raise_if_stopped(self) -> None:
        """Raise :class:`NodeNotRunning` while the node is stopped (capability
        ``lifecycle``: a stopping node resets its storages, which wakes every waiter)."""
        if not self._driver.running:
            raise self._stopped()

    def _stopped(self) -> Exception:
        node = cast("Driver", self._driver).replica.node_id
        return NodeNotRunning(
            f"{self.kind} {self.name!r}: node {node} is stopped; start it again "
            "(`async with node:`) to use it", applied=False
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
        raise_op_error(await self._driver.call(code, args, timeout=self.bound(timeout)))
        if self.expiry_rules is not None and self.expiry_kind is not None:
            raise_op_error(await self._driver.call(
                C.EXPIRY_RULES, [self.name, self.expiry_kind, *self.expiry_rules],
                timeout=self.bound(timeout)))

    def expired_count(self) -> int:
        """Elements that expired undelivered (capability ``expiry``)."""
        return self._view.expired(self.expiry_kind or "", self.name)

    def set_expired_listener(self, listener: Callable[[], None] | None) -> None:
        self._expired_listener = listener

    def on_expired(self) -> None:
        """Elements of the object expired (an :class:`~..replicated.events.Expired`)."""
        if self._expired_listener is not None:
            self._expired_listener()

    async def _call(self, code: int, args: list[Any], timeout: float | None,
                    on_orphan: Callable[[Any], None] | None = None) -> Any:
        declared = self._declared  # self._ready inlined: one coroutine frame less per op
        if (declared is None or not declared.done() or declared.cancelled()
                or declared.exception() is not None):
            await self._ensure_declared(timeout)
        elif not self._driver.running:
            raise self._stopped()
        result = await self._driver.call(
            code, args, timeout=self.timeout if timeout is None else self.bound(timeout),
            on_orphan=on_orphan)
        return raise_op_error(result) if isinstance(result, OpError) else result

    async def _call_many(self, code: int, args: Callable[[Any], list[Any]], values: list[Any],
                         timeout: float | None) -> list[Any]:
        """``code`` with ``args(value)`` for every one of ``values``, proposed together in
        runs of :data:`~.runs.MANY_AT_ONCE`; the results in order. Every op is encoded
        once, all before the first is proposed (a value the cluster refuses refuses them
        all); another failure raises once the run under way has ended (the runs before it
        applied)."""
        encode = self._driver.encode
        ops = [args(value) for value in values]
        encoded = [encode(code, op) for op in ops]
        await self._ready(timeout)
        results: list[Any] = []
        for start in range(0, len(ops), MANY_AT_ONCE):
            end = start + MANY_AT_ONCE
            run = await self._driver.call_many(code, ops[start:end], encoded[start:end],
                                               timeout=self.bound(timeout))
            results.extend(raise_op_error(result) for result in run)
        return results

    async def _ready(self, timeout: float | None) -> None:
        """Declared, on a running node or open client."""
        declared = self._declared
        if (declared is None or not declared.done() or declared.cancelled()
                or declared.exception() is not None):
            await self._ensure_declared(timeout)
        elif not self._driver.running:
            raise self._stopped()

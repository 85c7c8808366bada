"""Calls: how a driver's callers await their proposals, one (:meth:`Calls.call`) or many
at once (:meth:`Calls.call_many`), and the commit-latency observer they report to."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from .proposals import Proposal
from .replica import Replica

log = logging.getLogger(__name__)

#: A call whose op was applied before it could wait (a one-member commit in the step its
#: proposal took) lets the loop run first only when no such call did for this many
#: seconds: a loop of such calls still lets the loop's other work run this often.
YIELD_EVERY = 0.001


class Calls:
    """The awaiting half of :class:`~.driver.Driver` (which sets these up)."""

    replica: Replica
    #: Called as ``observer(code, seconds, result, error)`` when a call ends (commit
    #: latency and error metrics).
    call_observer: Callable[[int, float, Any, BaseException | None], None] | None
    #: When (``time.perf_counter``) a call last let the loop run (:meth:`_yield_now`).
    _yielded_at = 0.0

    def propose(
        self, code: int, args: list[Any], *, timeout: float,
        on_orphan: Callable[[Any], None] | None = None, step_now: bool = False,
        encoded: bytes | None = None,
    ) -> tuple[Proposal, asyncio.Future[Any]]:
        raise NotImplementedError

    def encode(self, code: int, args: list[Any]) -> bytes:
        """The op for :meth:`propose`'s ``encoded``: raises what :meth:`propose` would
        refuse ``args`` with (an unsupported value, a message too large); proposes
        nothing."""
        return self.replica.encode(code, args)

    async def call(
        self,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_orphan: Callable[[Any], None] | None = None,
        encoded: bytes | None = None,
    ) -> Any:
        """Propose and await; a cancelled caller leaves nothing half-done (see Replica.cancel)."""
        started = time.perf_counter()
        try:
            proposal, fut = self.propose(code, args, timeout=timeout, on_orphan=on_orphan,
                                         step_now=True, encoded=encoded)
        except Exception as exc:
            self._observe_call(code, started, None, exc)
            raise
        try:
            if fut.done() and self._yield_now(started):
                await asyncio.sleep(0)
            result = await fut
        except asyncio.CancelledError:
            self._abandon(proposal, fut, on_orphan)
            raise
        except Exception as exc:
            self._observe_call(code, started, None, exc)
            raise
        self._observe_call(code, started, result, None)
        return result

    async def call_many(
        self, code: int, args: list[list[Any]], encoded: list[bytes], *, timeout: float,
    ) -> list[Any]:
        """Propose ``code`` with every one of ``args`` (``encoded[i]`` as :meth:`encode`
        gave it for ``args[i]``) in this loop iteration, so they join one batch where
        they fit, and await them all; the results in order. Once all have ended the first
        failure raises. A cancelled caller leaves nothing half-done (see Replica.cancel)."""
        started = time.perf_counter()
        calls: list[tuple[Proposal, asyncio.Future[Any]]] = []
        try:
            for one, op in zip(args, encoded, strict=True):
                calls.append(self.propose(code, one, timeout=timeout, encoded=op))
        except BaseException as exc:
            for proposal, fut in calls:
                self._abandon(proposal, fut, None)
            self._observe_call(code, started, None, exc)
            raise
        try:
            results = await asyncio.gather(*(fut for _, fut in calls), return_exceptions=True)
        except asyncio.CancelledError:
            for proposal, fut in calls:
                self._abandon(proposal, fut, None)
            raise
        first: BaseException | None = None
        for result in results:
            error = result if isinstance(result, BaseException) else None
            self._observe_call(code, started, None if error else result, error)
            if first is None:
                first = error
        if first is not None:
            raise first
        return results

    def _yield_now(self, now: float) -> bool:
        """Whether a call started at ``now`` whose op was applied inside its proposal lets
        the loop run before it returns (see :data:`YIELD_EVERY`)."""
        if now - self._yielded_at < YIELD_EVERY:
            return False
        self._yielded_at = now
        return True

    def _abandon(self, proposal: Proposal, fut: asyncio.Future[Any],
                 on_orphan: Callable[[Any], None] | None) -> None:
        """The caller of ``proposal`` went away."""
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            # Applied, but the caller went away before taking the result (the future
            # resolved in this iteration: a one-member commit in step_now, or a cancel
            # racing the completion): the proposal is finished, so only here can a
            # pop's element still find its way back.
            if on_orphan is not None:
                on_orphan(fut.result())
        else:
            self.replica.cancel(proposal)

    def _observe_call(self, code: int, started: float, result: Any,
                      error: BaseException | None) -> None:
        if self.call_observer is not None:
            self.observe_call(code, time.perf_counter() - started, result, error)

    def observe_call(self, code: int, seconds: float, result: Any,
                     error: BaseException | None) -> None:
        """Report a call of op ``code`` that ended after ``seconds`` to the call observer,
        if there is one (an observer that raises is logged, never the caller's error)."""
        if self.call_observer is not None:
            try:
                self.call_observer(code, seconds, result, error)
            except Exception:
                log.exception("node %s: the call observer failed", self.replica.node_id)

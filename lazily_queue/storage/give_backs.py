"""Give-backs nobody awaits: what a pop took for a caller that went away goes back to
the head of its queue, proposed again until it applies.

A give-back (``QUEUE_UNPOP_STAMPED`` / ``QUEUE_UNPOP_HEADERS``) handed to
:class:`Returns` is proposed through the storage's driver (a member's, or a client's
session) with nobody waiting. One that failed without applying (its error's
``applied`` is ``False``: no quorum before it left, a disk refusing writes, no member
reachable, its deadline) is proposed again, as a new operation, after a pause that
doubles up to :data:`RETRY_MAX`, until it applies; it is safe to, since the failed one
never applied and never will. One whose outcome is unknown is never proposed again
under another number (it may yet apply, and the elements would go back twice): the
driver retries it under its own number (a member's replica while it runs, a client's
session on every link until its deadline). It ends, its elements lost and logged, when
its driver can no longer propose (the node stopped, the client closed or its session
ended), when the cluster refuses it for what it is (a refusal, a gate's permission
refusal once the session gave up on it), or when its outcome is unknown at the end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import OperationFailed
from ..raft.errors import CommitTimeout, NoQuorum, StorageUnavailable
from ..replicated.ops import OpError

if TYPE_CHECKING:
    from .replicated_object import Proposer

log = logging.getLogger(__name__)

#: The first pause before a give-back that failed without applying goes again (seconds).
RETRY_FIRST = 0.05
#: The longest pause between two attempts (seconds).
RETRY_MAX = 2.0
#: A give-back's timeout per attempt (its driver retries it within, under its number).
ATTEMPT_TIMEOUT = 3600.0
#: How long a node stopping with hand-over waits for the give-backs under way (seconds).
SETTLE_WAIT = 5.0


class _Stopped(Exception):
    """The driver no longer proposes (its node stopped, its client closed)."""


def _ignore(_result: Any) -> None:
    """``on_orphan`` of a give-back: its result is only ``None`` or a refusal."""


def transient(error: BaseException) -> bool:
    """Whether ``error`` failed a give-back that certainly did not apply, for a cause
    that passes (quorum, disk, reachability, time): proposing it again is safe."""
    if not isinstance(error, OperationFailed) or error.applied is not False:
        return False
    if isinstance(error, NoQuorum | CommitTimeout | StorageUnavailable):
        return True
    from ..client.protocol import Unreachable  # the client's; it imports storage

    return isinstance(error, Unreachable)


class Returns:
    """The give-backs of one queue storage under way (module docstring)."""

    def __init__(self, driver: Proposer, name: str) -> None:
        self._driver = driver
        self._name = name
        #: The give-backs under way (until they applied or were given up).
        self.pending: set[asyncio.Task[None]] = set()
        #: Attempts proposed again after one failed without applying.
        self.retried = 0
        #: Elements given up on (logged as lost).
        self.lost = 0

    def start(self, parts: list[tuple[int, list[Any]]]) -> asyncio.Task[None] | None:
        """Give back each of ``parts`` (``code``, ``[name, values, runs, ...]``) in turn,
        each proposed once the one before it applied or was given up (so that each goes
        to the head after the one before, whatever attempts fail), the first attempt of
        the first now (joining what is proposed with it); the task awaiting them
        (``None``: no loop runs, the elements are lost)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop running (an interpreter shutting down)
            for _, args in parts:
                self._lost(args, "no event loop runs")
            return None
        task = loop.create_task(self._run_parts(parts, self._attempt(*parts[0])))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        return task

    async def _run_parts(self, parts: list[tuple[int, list[Any]]],
                         first: asyncio.Future[Any] | Exception) -> None:
        for k, (code, args) in enumerate(parts):
            await self._run(code, args, first if k == 0 else self._attempt(code, args))

    def _attempt(self, code: int, args: list[Any]) -> asyncio.Future[Any] | Exception:
        """Propose one attempt: its future, or what proposing it raised."""
        if not self._driver.running:
            return _Stopped("its node stopped or its client closed")
        try:
            return self._driver.propose(code, args, timeout=ATTEMPT_TIMEOUT,
                                        on_orphan=_ignore)[1]
        except Exception as exc:  # judged by _run
            return exc

    async def _run(self, code: int, args: list[Any],
                   attempt: asyncio.Future[Any] | Exception) -> None:
        pause = RETRY_FIRST
        while True:
            try:
                if isinstance(attempt, Exception):
                    raise attempt
                result = await attempt
            except Exception as exc:  # each kind is judged here
                if not transient(exc):
                    self._lost(args, str(exc), unknown=getattr(exc, "applied", False) is None)
                    return
                self.retried += 1
                log.info("queue %r: a give-back failed without applying (%s); proposing it "
                         "again in %.2f s", self._name, exc, pause)
                await asyncio.sleep(pause)
                pause = min(RETRY_MAX, pause * 2)
                attempt = self._attempt(code, args)
                continue
            if isinstance(result, OpError):
                self._lost(args, str(result))
            return

    def _lost(self, args: list[Any], why: str, *, unknown: bool = False) -> None:
        count = len(args[1]) if len(args) > 1 and isinstance(args[1], list) else 0
        self.lost += count
        if unknown:
            log.warning("queue %r: the give-back of %d undelivered element(s) has an "
                        "unknown outcome (%s): it may yet apply under its number, never "
                        "twice", self._name, count, why)
        else:
            log.error("queue %r: could not return %d undelivered element(s): %s",
                      self._name, count, why)



async def settle_returns(storages: Iterable[object], timeout: float) -> None:
    """Wait up to ``timeout`` seconds for the give-backs under way of ``storages`` (a
    client before it ends its session, a node before it stops: they would fail them)."""
    pending = [task for storage in storages
               if isinstance(returns := getattr(storage, "returns", None), Returns)
               for task in returns.pending]
    if pending:
        await asyncio.wait(pending, timeout=timeout)

"""RedisQueueStorage: a QueueCell backend on a Redis list.

The FIFO is a list (``RPUSH`` / ``LPOP``): a stream cannot take an element back at its
head, which ``unpoll`` needs. Push (closed and capacity checks), pop (of one or many)
and close are Lua scripts, so a pop hands each element to exactly one caller and a
bounded queue is never overfilled. A pop is final once the script ran: a process that
dies before using the element loses it (at most once, as on every backend). A pop
cancelled after its script ran puts what it took back at the head, sent again while
the server cannot be reached, under one once-key so that it applies once.

A push given a producer ``msg_id`` (capability ``dedup``) is guarded by a key for that
id, expiring after the window (:mod:`.redis_once_scripts`).

Capabilities: ``observable``, ``peek`` and ``dedup``. The readers read the mirror (see
:mod:`.mirror`): ``len``, ``is_closed`` and the head are exact as of the last refresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.queue import EMPTY, QueuePopError, QueuePushError, validate_capacity
from ..errors import shown
from ..storage.attempts import bounds_timeouts
from ..storage.capabilities import StorageCapabilities
from ..storage.queue import QueueChangeListener
from .batching import Coalescer
from .codec import decode, encode
from .errors import BrokerOutOfMemory, BrokerUnavailable
from .mirror import MAX_BATCH
from .mirrors import QueueMirror
from .redis_once_scripts import ONCE_WINDOW_MS

if TYPE_CHECKING:
    from .redis_backend import RedisStreamsStorage

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Seconds between a failed put-back attempt and the next: the first pause, doubling up
#: to the longest.
PUT_BACK_FIRST_PAUSE = 0.05
PUT_BACK_LONGEST_PAUSE = 2.0
#: Seconds closing the storage waits for put-backs under way.
PUT_BACK_CLOSE_WAIT = 5.0


@bounds_timeouts
class RedisQueueStorage(QueueMirror[T]):
    """A FIFO on a Redis list: the QueueStorage seam, observable and peekable."""

    kind = "queue"
    capabilities = StorageCapabilities(observable=True, peek=True, lifecycle=True,
                                       dedup=True)

    def __init__(
        self, backend: RedisStreamsStorage, name: str, *, capacity: int | None = None
    ) -> None:
        self._backend = backend
        self._capacity = validate_capacity(capacity)
        #: The list, closed flag, head version and state version (see
        #: :mod:`.redis_scripts`), then the settings.
        self._keys = [backend.key("q", name, part)
                      for part in ("list", "closed", "head", "version", "cfg")]
        self._channel = backend.key("q", name, "changes")
        self._listener: QueueChangeListener | None = None
        self._len = 0
        self._head_id: object = None
        self._closed = False
        self._items: list[Any] = []
        #: Pushes of this process that completed (a pop that found the list empty
        #: compares it before and after).
        self._pushes_done = 0
        self._pushes: Coalescer[bytes, tuple[int, bytes, int]] = Coalescer(self._push_batch)
        #: The put-back attempts under way (a pop waits for them: the head first).
        self._putting_back: set[asyncio.Future[Any]] = set()
        #: The put-backs not applied yet, each retried until one attempt applies.
        self._giving_back: set[asyncio.Future[None]] = set()
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"redis queue {shown(name)}")
        backend.listen(self._channel, self._keys[0], self._changed)

    def __repr__(self) -> str:
        return f"RedisQueueStorage({self.name!r}, len={self._len}, capacity={self._capacity})"

    @property
    def _setting(self) -> str:
        """The capacity as the settings hash holds it."""
        return "none" if self._capacity is None else str(self._capacity)

    async def _declare(self) -> None:
        await self._backend.declare("QUEUE_DECLARE", self._keys, [self._setting])

    async def _read(self) -> None:
        limit = max(1, self._backend.view_limit)
        self._reading()
        try:
            length, closed, head, items, version = await self._backend.run(
                "QUEUE_READ", self._keys, [limit])
        except BaseException:
            self._read_failed()
            raise
        self._read_state(int(version), (int(length), bytes(head), bool(closed)),
                         [decode(raw) for raw in items])

    # -- reads (the mirror) --------------------------------------------------------------

    def peek(self) -> Any:
        return self._items[0] if self._len and self._items else EMPTY

    def elements(self) -> list[Any]:
        """The first ``view_limit`` elements as of the last refresh."""
        return list(self._items)

    def _pushed(self, value: Any, head: bytes, version: int) -> None:
        """An element this process pushed counts at once (see
        :meth:`~.mirrors.QueueMirror._count_push`)."""
        self._pushes_done += 1
        self._count_push(version, head, value)

    # -- operations ----------------------------------------------------------------------

    async def offer(self, value: T, *, timeout: float | None = None) -> QueuePushError | None:
        data = encode(value)
        await self._ready()
        result, head, version = await self._pushes.call(data)
        return await self._settle(value, result, head, version)

    async def _settle(
        self, value: T, result: int, head: bytes, version: int
    ) -> QueuePushError | None:
        if result == -1:
            await self.sync()
            return QueuePushError.Closed
        if result == -2:
            await self.sync()
            return QueuePushError.Full
        self._pushed(value, head, version)
        return None

    async def offer_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> QueuePushError | None:
        data = encode(value)
        await self._ready()
        cap = -1 if self._capacity is None else self._capacity
        keys = [*self._keys, self._backend.once_key("q", self.name, msg_id)]
        repeat, answer = await self._backend.run(
            "QUEUE_PUSH_ONCE", keys, [cap, self._channel, data, ONCE_WINDOW_MS])
        if repeat:
            return None
        head, version, result = answer
        return await self._settle(value, int(result), bytes(head), int(version))

    async def _push_batch(self, values: list[bytes]) -> list[tuple[int, bytes, int]]:
        """The pushes made meanwhile, in order, in one script call: per value the length
        before it (or -1 closed, -2 full), the head version after the batch and the
        state version right after the value."""
        cap = -1 if self._capacity is None else self._capacity
        head, version, *each = await self._backend.run(
            "QUEUE_PUSH", self._keys, [cap, self._channel, *values])
        pushed = [int(result) >= 0 for result in each]
        after = int(version) - sum(pushed)
        out = []
        for result, applied in zip(each, pushed, strict=True):
            after += applied
            out.append((int(result), bytes(head), after))
        return out

    async def poll_many(self, n: int, *, timeout: float | None = None) -> list[T] | QueuePopError:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(n)}")
        await self._ready()
        while self._putting_back:  # a cancelled pop's elements go back before this pop
            await asyncio.wait(set(self._putting_back))
        pushes = self._pushes_done
        call = asyncio.ensure_future(
            self._backend.run("QUEUE_POP", self._keys, [min(n, MAX_BATCH), self._channel]))
        try:
            result = await asyncio.shield(call)
        except asyncio.CancelledError:
            # the script runs (or ran) anyway: what it took goes back at the head
            self._putting_back.add(call)
            call.add_done_callback(self._put_back)
            raise
        if result == -1:
            await self.sync()
            return QueuePopError.Closed
        version = result[0]
        if not isinstance(version, int):  # the elements taken (bulk strings)
            self._changed()
            return [decode(raw) for raw in result]
        if self._pushes_done == pushes:
            self._observed_empty(version)
        # else a push of this process completed meanwhile, so after the pop on the
        # server: the mirror counts it, and the caller's next pop finds it
        self._changed()
        return QueuePopError.Empty

    def _put_back(self, call: asyncio.Future[Any]) -> None:
        """After a cancelled pop: put the elements its script took back at the head."""
        self._putting_back.discard(call)
        if call.cancelled() or call.exception() is not None:
            return
        taken = call.result()
        if isinstance(taken, list) and taken and not isinstance(taken[0], int):
            task = asyncio.ensure_future(self._give_back(taken))
            self._giving_back.add(task)
            task.add_done_callback(self._giving_back.discard)

    async def _give_back(self, taken: list[Any]) -> None:
        """Put ``taken`` back at the head, sending it again after a failure that may
        pass (the server unreachable, a lost reply, out of memory) until one attempt
        applies. Every attempt carries the same once-key, so an attempt that applied
        though its reply was lost makes the later ones apply nothing."""
        once = self._backend.once_key("q", self.name, f"put-back:{uuid.uuid4().hex}")
        keys = [*self._keys, once]
        args = [self._channel, self._setting, *taken, ONCE_WINDOW_MS]
        pause = PUT_BACK_FIRST_PAUSE
        while True:
            attempt = asyncio.ensure_future(self._backend.run("QUEUE_UNPOP_ONCE", keys, args))
            self._putting_back.add(attempt)
            try:
                await asyncio.shield(attempt)
            except (BrokerUnavailable, BrokerOutOfMemory) as exc:
                log.warning("%r: putting back %d element(s) a cancelled pop took failed "
                            "(%s); trying again in %.2f s", self, len(taken), exc, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, PUT_BACK_LONGEST_PAUSE)
                continue
            except Exception as exc:
                log.error("%r: %d element(s) a cancelled pop took could not be put back "
                          "and are lost: %s", self, len(taken), exc)
                return
            finally:
                self._putting_back.discard(attempt)
                self._changed()
            return

    async def aclose(self) -> None:
        """Put back what cancelled pops took (they are on their way, retried while the
        server cannot be reached), waiting up to :data:`PUT_BACK_CLOSE_WAIT` seconds,
        then stop; what is still not put back then is logged as lost."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(PUT_BACK_CLOSE_WAIT):
                while self._putting_back or self._giving_back:
                    await asyncio.wait(self._putting_back | self._giving_back)
        for task in list(self._giving_back):
            log.error("%r: closed while elements a cancelled pop took were still being "
                      "put back (the server unreachable for %.0f s): they are lost",
                      self, PUT_BACK_CLOSE_WAIT)
            task.cancel()
        await super().aclose()

    async def unpoll(self, values: list[T], *, timeout: float | None = None) -> None:
        if not values:
            return
        data = [encode(v) for v in values]
        await self._ready()
        await self._backend.run(
            "QUEUE_UNPOP", self._keys, [self._channel, self._setting, *data])
        self._changed()

    async def close(self, *, timeout: float | None = None) -> None:
        await self._ready()
        await self._backend.run("QUEUE_CLOSE", self._keys, [self._channel, self._setting])
        await self.sync()

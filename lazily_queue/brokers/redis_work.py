"""RedisWorkQueueStorage: a WorkQueueCell backend on a Redis stream and consumer group.

Items are stream entries; a claim is ``XREADGROUP`` in the group ``lq`` under the
worker's name, preceded by ``XCLAIM`` of the leases idle longer than the visibility
timeout (the broker's clock: lease expiry needs no reaper). ``XPENDING`` gives each
entry's delivery count: an entry claimed again after its last allowed delivery, or
nacked on its last one, moves to the dead-letter stream (``XADD`` there, ``XACK`` +
``XDEL`` here). Every step is a Lua script, so an ack, nack, extension or release only
takes effect while the worker still holds that very delivery.

The pending entries are scanned for expired leases only once one may have expired:
each scan stores, in the settings hash (``expiry_ms``), the earliest server time a
lease it saw (or any later one) can expire; nacks, releases and reaps reset it. A
program other than this library that moves entries of the group with ``XCLAIM ...
IDLE`` is seen when that time comes, not at once.

What differs from the in-process work queue (capabilities: ``observable``,
``own_clock``, ``dedup``; not ``logical_time``):

- leases run on the Redis server's clock; a ``now`` the caller gives is ignored;
- a nacked, expired or released item is delivered again before never-delivered ones
  (not at the tail);
- ``item_id`` is derived from the stream entry id, and ``delivery_id`` from the item and
  its delivery count; a redriven dead letter is a new entry (a new ``item_id``);
- an ack refused here cannot be told apart from one that was never made: the receipt's
  ``duplicate`` is always ``False``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    Receipt,
    change_mask,
    validate_config,
)
from ..core.work import WorkTransition as WT
from ..errors import InvalidConfiguration, shown
from ..names import check_named_member
from ..storage.attempts import bounds_timeouts
from ..storage.capabilities import StorageCapabilities
from ..storage.work import Settlement, WorkQueueChangeListener
from .batching import Coalescer
from .codec import decode, encode
from .errors import BrokerError, IncompatibleBrokerObject
from .mirror import MAX_BATCH
from .mirrors import WorkMirror, foreign_letter
from .redis_once_scripts import ONCE_WINDOW_MS
from .redis_work_ids import (
    MAX_DELIVERIES_LIMIT,
    check_claimed_worker,
    delivery_id,
    entry_id,
    item_id,
    item_of,
    may_hold_leases,
    split_delivery,
    text_of,
)

if TYPE_CHECKING:
    from .redis_backend import RedisStreamsStorage

log = logging.getLogger(__name__)

GROUP = "lq"
#: Dead letters one redrive script call reads (a redrive of more takes several calls).
REDRIVE_PAGE = 256


@bounds_timeouts
class RedisWorkQueueStorage(WorkMirror):
    """A work queue on a Redis stream: the WorkQueueStorage seam, observable, on the
    server's clock."""

    kind = "work queue"
    capabilities = StorageCapabilities(observable=True, own_clock=True, lifecycle=True,
                                       dedup=True)

    def __init__(
        self, backend: RedisStreamsStorage, name: str, *, visibility_timeout: float,
        max_deliveries: int,
    ) -> None:
        vt, limit = validate_config(visibility_timeout, max_deliveries)
        if limit > MAX_DELIVERIES_LIMIT:
            raise InvalidConfiguration(
                f"max_deliveries must be <= {MAX_DELIVERIES_LIMIT} on Redis, got {limit}")
        self.visibility_timeout = float(vt)
        #: Leases are in seconds of the broker's clock, as ``visibility_timeout``.
        self.lease_seconds = self.visibility_timeout
        self.max_deliveries = limit
        self._vt_ms = max(1, math.ceil(vt * 1000))
        self._backend = backend
        self._keys = [backend.key("w", name, part) for part in ("stream", "dead", "cfg")]
        self._channel = backend.key("w", name, "changes")
        self._listener: WorkQueueChangeListener | None = None
        self._counts = (0, 0, 0)
        self._pending: list[PendingItem] = []
        self._in_flight: list[Delivery] = []
        self._dead: list[DeadLetter] = []
        self._ignored_now = False
        self._expiry: asyncio.TimerHandle | None = None
        self._settlers: dict[tuple[str, str], Coalescer[tuple[str, int], bool]] = {}
        self._pushes: Coalescer[bytes, Any] = Coalescer(self._push_batch)
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"redis work queue {shown(name)}")
        backend.listen(self._channel, self._keys[0], self._changed)

    def __repr__(self) -> str:
        return f"RedisWorkQueueStorage({self.name!r}, counts={self._counts})"

    async def _declare(self) -> None:
        await self._backend.declare("WORK_DECLARE", self._keys,
                                [GROUP, self._vt_ms, self.max_deliveries])

    async def _read(self) -> None:
        views = self._views_due()
        limit = max(1, self._backend.view_limit) if views else 1
        self._reading()
        try:
            clock, pending, in_flight, dead, waiting, flying, letters, last = await self._run(
                "WORK_READ", self._keys, [GROUP, limit, self._vt_ms])
        except BaseException:
            self._read_failed()
            raise
        later = self._unread_pushes(item_id(last))
        now = int(clock[0]) + int(clock[1]) / 1e6
        if views:
            self._pending = [PendingItem(item_id(e), decode(v or b""), int(c))
                             for e, c, v in waiting]
            self._in_flight = sorted(
                (Delivery(delivery_id(item_id(e), int(c)), item_id(e), decode(v or b""),
                          text_of(worker), int(c),
                          now - int(idle) / 1000 + self.visibility_timeout)
                 for e, c, v, worker, idle in flying), key=lambda d: d.delivery_id)
            self._dead = [self._letter(e, fields) for e, fields in letters]
            self._wake_at_expiry(now)
        old, self._counts = self._counts, (int(pending) + later, int(in_flight), int(dead))
        mask = change_mask(old, self._counts)
        if mask and self._listener is not None:
            self._listener(mask)

    async def _ready_to_settle(self) -> None:
        """Before a settlement: :meth:`_ready`, except that a declaration refused for what
        the server became since (an eviction policy set meanwhile) does not stop it: the
        leases it settles were made under a declaration that held, and settling them
        keeps their items from coming back (a NATS work queue settles alike). One never
        declared is refused where its script finds no consumer group."""
        try:
            await self._ready()
        except IncompatibleBrokerObject:
            pass

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script that needs the consumer group; when the server lost it (its keys
        were deleted or flushed, or it restarted without persistence), declare the work
        queue again and run the script once more."""
        try:
            return await self._backend.run(script, keys, args)
        except BrokerError as exc:
            if "NOGROUP" not in str(exc):
                raise
        log.warning("%r: the server lost the consumer group (keys deleted, flushed or not "
                    "persisted); declaring the work queue again", self)
        self._declared.forget()
        await self._declared.ensure()
        return await self._backend.run(script, keys, args)

    def _wake_at_expiry(self, now: float) -> None:
        """Refresh again when the first lease in view expires (it then counts as pending,
        and a claim waiting for work must see it)."""
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if self._in_flight:
            due = min(d.deadline for d in self._in_flight) - now + 0.001
            loop = asyncio.get_running_loop()
            self._expiry = loop.call_later(max(0.0, due), self._changed)

    async def aclose(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        await super().aclose()

    @staticmethod
    def _letter(entry: Any, fields: Any) -> DeadLetter:
        """The dead letter of a dead-letter stream entry (its fields possibly written by
        another program: see :func:`.mirrors.foreign_letter`)."""
        data = {text_of(fields[i]): fields[i + 1] for i in range(0, len(fields) - 1, 2)}
        try:
            item: int | None = item_id(data.get("i", b""))
        except ValueError:
            item = None
        return foreign_letter(item, decode(data.get("v", b"")), data.get("a"), data.get("r"),
                              item_id(entry))

    # -- reads (the mirror) --------------------------------------------------------------

    def in_flight(self) -> list[Delivery]:
        """Up to ``view_limit`` live leases of every worker, by ``delivery_id``
        (``pending`` lists the first ``view_limit`` pending items, redeliveries first)."""
        return list(self._in_flight)

    # -- operations ----------------------------------------------------------------------

    def _note_now(self, now: float | None) -> None:
        if now is not None and not self._ignored_now:
            self._ignored_now = True
            log.info("%r: leases run on the Redis server's clock; the given time is ignored",
                     self)

    async def push(self, value: Any, *, timeout: float | None = None) -> WT[int]:
        data = encode(value)
        await self._ready()
        entry = await self._pushes.call(data)
        self._pushed(item_id(entry))
        return WT(item_id(entry), 0)

    async def push_once(self, value: Any, msg_id: str, *, timeout: float | None = None) -> WT[int]:
        data = encode(value)
        await self._ready()
        keys = [self._keys[0], self._backend.once_key("w", self.name, msg_id)]
        repeat, answer = await self._backend.run(
            "WORK_PUSH_ONCE", keys, [self._channel, data, ONCE_WINDOW_MS])
        if repeat:
            return WT(item_id(answer), 0)
        self._pushed(item_id(answer[0]))
        return WT(item_id(answer[0]), 0)

    async def _push_batch(self, values: list[bytes]) -> list[Any]:
        """The pushes made meanwhile, in order, in one script call."""
        return list(await self._backend.run("WORK_PUSH", self._keys[:1],
                                            [self._channel, *values]))

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WT[list[Delivery]]:
        self.check_worker_name(worker)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(n)}")
        self._note_now(now)
        await self._ready()
        clock, *flat = await self._run(
            "WORK_CLAIM", self._keys,
            [GROUP, worker, min(n, MAX_BATCH), self._vt_ms, self.max_deliveries, self._channel])
        deadline = int(clock[0]) + int(clock[1]) / 1e6 + self.visibility_timeout
        leased = []
        for entry, count, value in zip(flat[0::3], flat[1::3], flat[2::3], strict=True):
            item = item_id(entry)
            leased.append(Delivery(delivery_id(item, int(count)), item, decode(value or b""),
                                   worker, int(count), deadline))
        self._changed()
        return WT(leased, 0)

    def check_worker_name(self, worker: str) -> None:
        """Raise :class:`InvalidName` for a worker name a claim refuses (checked before
        anything is sent): empty, over the length rule, or starting with ``lq.``."""
        check_named_member(worker, "worker name")
        check_claimed_worker(worker)

    def check_claim_time(self, now: float) -> None:
        """Every time: the broker's leases run on its server's clock, not on ``now``."""
        return None

    async def _settle(self, worker: str, mode: str, deliveries: list[int]) -> int:
        """Settle ``deliveries`` of ``worker``: how many were that worker's live ones.

        Concurrent settlements of one worker and mode go to the server together (one
        script call for all the acks a ``deliveries()`` batch makes). A worker name no
        claim takes holds no lease: nothing is sent and nothing is settled."""
        splits = [split for d in deliveries if (split := split_delivery(d)) is not None]
        if not may_hold_leases(worker) or not splits:
            return 0
        await self._ready_to_settle()
        settler = self._settlers.get((worker, mode))
        if settler is None:
            settler = self._settlers[(worker, mode)] = Coalescer(
                lambda batch: self._send(worker, mode, batch))
        if len(splits) == 1:
            done = int(await settler.call(splits[0]))
        else:
            done = sum(await asyncio.gather(*(settler.call(split) for split in splits)))
        if done and mode != "extend":
            self._changed()
        return done

    async def _send(self, worker: str, mode: str, batch: list[tuple[str, int]]) -> list[bool]:
        pairs = [part for split in batch for part in split]
        each = await self._run(
            "WORK_SETTLE", self._keys,
            [GROUP, worker, mode, self._vt_ms, self.max_deliveries, self._channel, *pairs])
        flags = each.encode() if isinstance(each, str) else bytes(each)
        return [flag == ord("1") for flag in flags]

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WT[Receipt | None]:
        mode = "ack" if outcome == "acked" else "nack"
        if not await self._settle(worker, mode, [delivery_id]):
            return WT(None, 0)
        item = item_of(delivery_id)
        return WT(Receipt(self.name, delivery_id, item, worker, outcome, time.time()), 0)

    async def settle_many(
        self, worker: str, delivery_ids: list[int], outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WT[list[Receipt | None]]:
        """Settle several deliveries of ``worker`` in one script call, in order: a
        receipt per id as :meth:`settle` gives it (``None`` for a refused one)."""
        mode = "ack" if outcome == "acked" else "nack"
        held = may_hold_leases(worker)
        splits = [split_delivery(d) if held else None for d in delivery_ids]
        valid = [split for split in splits if split is not None]
        if valid:
            await self._ready_to_settle()
        flags = iter(await self._send(worker, mode, valid) if valid else [])
        receipts: list[Receipt | None] = []
        at = time.time()
        for delivery, split in zip(delivery_ids, splits, strict=True):
            if split is not None and next(flags):
                receipts.append(Receipt(self.name, delivery, item_of(delivery), worker,
                                        outcome, at))
            else:
                receipts.append(None)
        if any(receipts):
            self._changed()
        return WT(receipts, 0)

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WT[int]:
        return WT(await self._settle(worker, "release", list(delivery_ids)), 0)

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WT[bool]:
        self._note_now(now)
        return WT(bool(await self._settle(worker, "extend", [delivery_id])), 0)

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WT[int]:
        """Requeue (or dead-letter, after the last attempt) every lease idle longer than
        the visibility timeout by the server's clock; claims do this too."""
        self._note_now(now)
        await self._ready()
        expired = await self._run(
            "WORK_REAP", self._keys,
            [GROUP, self._vt_ms, self.max_deliveries, self._channel])
        if expired:
            self._changed()
        return WT(int(expired), 0)

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WT[int]:
        # an id that is no int >= 0 names no dead letter, as on a node
        ids = [] if item_ids is None else [
            entry_id(i) for i in item_ids if type(i) is int and i >= 0]
        if item_ids is not None and not ids:
            return WT(0, 0)
        await self._ready()
        moved, after = 0, "-"
        while after:
            done, last = await self._backend.run(
                "WORK_REDRIVE", self._keys[:2], [self._channel, after, REDRIVE_PAGE, *ids])
            moved += int(done)
            after = text_of(last)
        if moved:
            self._changed()
        return WT(int(moved), 0)


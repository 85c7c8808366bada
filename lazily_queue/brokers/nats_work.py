"""NatsWorkQueueStorage: a WorkQueueCell backend on a JetStream work-queue stream.

Items are messages of a work-queue-retention stream with one durable pull consumer
``lq`` shared by every worker: ``ack_wait`` is the visibility timeout,
``max_deliver`` is ``max_deliveries + 1`` and ``max_ack_pending`` is unlimited (-1, set
on a consumer declared with the server's default too), so any number of leases may be
out. A claim pulls what is ready (``no_wait``);
ack is a confirmed ``+ACK``; nack is a confirmed ``-NAK`` (with ``nack_delay``; confirmed,
so the next claim finds the item ahead of newer ones), or, on the last
attempt, a publish to the dead-letter stream ``LQ_DL_<name>`` followed by ``+TERM``;
extend is ``+WPI`` (in progress: the server restarts the lease); release is ``-NAK``.
A message the server delivers beyond ``max_deliveries`` (its last lease expired) is
dead-lettered by the claim that receives it (:mod:`.nats_dead_letters`).

What differs from the in-process work queue (capabilities: ``observable``,
``own_clock``, ``dedup``; not ``logical_time``):

- leases run on the server's clock (``ack_wait``); a given ``now`` is ignored, and a
  delivery's ``deadline`` is this process's estimate (its wall clock at the claim plus
  the visibility timeout);
- only the process that claimed a delivery can settle it; it refuses a settlement
  once its estimate of the deadline passed (JetStream itself accepts a late ack even
  after redelivering the message);
- nacked, expired and released messages are delivered again before new ones, and a
  release counts as a delivery (JetStream counts every one);
- JetStream does not say which unacknowledged messages are due for redelivery (nacked,
  or leased by a worker that stopped), nor list another client's leases. So
  ``pending_len`` is the consumer's undelivered count plus its unacknowledged messages
  not leased to this process (those may be redelivered), ``in_flight_len`` this
  process's live leases, and :meth:`in_flight` lists those. A claim that finds nothing
  hides the maybe-redeliverable part for ``poll_interval`` seconds, so a waiting claim
  tries again at that pace (bounded polling) while other processes hold leases.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from nats.aio.msg import Msg
from nats.js.api import AckPolicy

from ..core.work import (
    DeadLetter,
    Delivery,
    PendingItem,
    Receipt,
    change_mask,
    validate_config,
)
from ..core.work import WorkTransition as WT
from ..errors import shown
from ..names import check_named_member
from ..storage.attempts import bounds_timeouts
from ..storage.capabilities import StorageCapabilities
from ..storage.work import Settlement, WorkQueueChangeListener
from . import nats_dead_letters
from .codec import decode, encode
from .errors import IncompatibleBrokerObject
from .mirrors import WorkMirror
from .nats_consumer_settings import PUT_BACK, refreshed
from .nats_leases import Leases
from .nats_limits import MAX_INT, MAX_SECONDS, check_within
from .nats_names import object_token
from .nats_work_declaration import CONSUMER, WorkDeclaration

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage


@bounds_timeouts
class NatsWorkQueueStorage(WorkDeclaration, WorkMirror):
    """A work queue on JetStream: the WorkQueueStorage seam, observable, on the server's
    clock."""

    kind = "work queue"
    capabilities = StorageCapabilities(observable=True, own_clock=True, lifecycle=True,
                                       dedup=True)

    def __init__(
        self, backend: NatsJetStreamStorage, name: str, *, visibility_timeout: float,
        max_deliveries: int, nack_delay: float = 0.0,
    ) -> None:
        vt, limit = validate_config(visibility_timeout, max_deliveries)
        check_within("visibility_timeout", vt, MAX_SECONDS, "ack_wait in nanoseconds")
        # Its consumer's max_deliver is max_deliveries + 1 (the last goes to the dead letters).
        check_within("max_deliveries", limit, MAX_INT - 1, "max_deliver (max_deliveries + 1)")
        self.visibility_timeout = float(vt)
        #: Leases are in seconds of the broker's clock, as ``visibility_timeout``.
        self.lease_seconds = self.visibility_timeout
        self.max_deliveries = limit
        self.nack_delay = nack_delay
        #: What this work queue declares of its consumer (:mod:`.nats_consumer_settings`).
        self._settings: dict[str, Any] = {
            "ack_policy": AckPolicy.EXPLICIT, "ack_wait": self.visibility_timeout,
            "max_deliver": limit + 1, "backoff": None}
        self._backend = backend
        tok = object_token(name, len("LQ_DL_"))
        self.stream, self.subject = f"LQ_W_{tok}", f"lq.w.{tok}"
        self.dead_stream, self.dead_subject = f"LQ_DL_{tok}", f"lq.dl.{tok}"
        #: Where this library's processes announce their claims and settlements.
        self.notices = f"lq.n.w.{tok}"
        self._listener: WorkQueueChangeListener | None = None
        self._leases = Leases(f"nats work queue {shown(name)}", f"{CONSUMER} of {self.stream}")
        self._counts = (0, 0, 0)
        self._pending: list[PendingItem] = []
        self._dead: list[DeadLetter] = []
        self._unacked = 0
        self._hidden_until = 0.0
        self._subscribed = False
        self._noticing = backend.outages.check
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"nats work queue {shown(name)}")

    def __repr__(self) -> str:
        return f"NatsWorkQueueStorage({self.name!r}, counts={self._counts})"

    async def _read(self) -> None:
        self._reading()
        try:
            await self._read_consumer()
        except BaseException:
            self._read_failed()
            raise

    async def _read_consumer(self) -> None:
        b = self._backend
        limit = max(1, b.view_limit)
        async with b.errors(f"reading work queue {self.stream}"):
            seen = self._leases.seen()
            consumer = await refreshed(b.js, self.stream, CONSUMER,
                                       {**self._settings, **PUT_BACK}, self._declare_again,
                                       self._check_again)
            self._leases.counted(consumer, seen)
            dead = await b.js.stream_info(self.dead_stream)
            if self._views_due():
                delivered = consumer.delivered.stream_seq if consumer.delivered else 0
                undelivered = await b.messages(self.stream, (delivered or 0) + 1, limit)
                letters = await b.messages(self.dead_stream, dead.state.first_seq, limit)
                self._pending = [PendingItem(seq, decode(raw.data or b""), 0)
                                 for seq, raw in undelivered]
                self._dead = [nats_dead_letters.letter(seq, raw) for seq, raw in letters]
        self._leases.expire(time.time())
        self._unacked = consumer.num_ack_pending or 0
        waiting = consumer.num_pending or 0
        # the messages past the last one delivered all wait: the last sequence it saw
        delivered = (consumer.delivered.stream_seq if consumer.delivered else 0) or 0
        later = self._unread_pushes(delivered + waiting)
        self._install(waiting + later, dead.state.messages)

    def _install(self, undelivered: int, dead: int) -> None:
        mine = len(self._leases)
        elsewhere = max(0, self._unacked - mine)
        if time.monotonic() < self._hidden_until:
            elsewhere = 0
        old = self._counts
        self._counts = (undelivered + elsewhere, mine, dead)
        mask = change_mask(old, self._counts)
        if mask and self._listener is not None:
            self._listener(mask)

    # -- reads (the mirror) --------------------------------------------------------------

    def in_flight(self) -> list[Delivery]:
        """This process's live leases, by ``delivery_id`` (``pending`` lists up to
        ``view_limit`` messages the consumer has not delivered yet)."""
        return self._leases.live()

    # -- operations ----------------------------------------------------------------------

    async def push(self, value: Any, *, timeout: float | None = None) -> WT[int]:
        return await self._push(value, None)

    async def push_once(
        self, value: Any, msg_id: str, *, timeout: float | None = None
    ) -> WT[int]:
        return await self._push(value, msg_id)

    async def _push(self, value: Any, msg_id: str | None) -> WT[int]:
        data = encode(value)
        await self._ready()
        b = self._backend
        async with b.errors(f"pushing to {self.stream}"):
            ack = await self._send(self.stream, self.subject, data, msg_id)
        if not ack.duplicate:
            self._pushed(int(ack.seq))
        return WT(int(ack.seq), 0)

    async def poll_many(
        self, worker: str, n: int, now: float | None, *, timeout: float | None = None
    ) -> WT[list[Delivery]]:
        self.check_worker_name(worker)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {shown(n)}")
        await self._ready()
        b = self._backend
        leased: list[Delivery] = []
        sent = self._newest()
        async with b.errors(f"claiming from {self.stream}"):
            msgs = await b.pull_declared(self.stream, CONSUMER, n, self._declare_again,
                                         self.redeclare)
            deadline = time.time() + self.visibility_timeout
            for msg in msgs:
                meta = msg.metadata
                delivery_id, _ = self._leases.delivered(meta.sequence.consumer)
                if meta.num_delivered > self.max_deliveries:
                    await self._dead_letter(msg, meta.num_delivered - 1, "expired")
                    continue
                delivery = Delivery(delivery_id, meta.sequence.stream,
                                    decode(msg.data), worker, meta.num_delivered, deadline)
                self._leases[delivery.delivery_id] = (msg, delivery)
                leased.append(delivery)
        if not msgs:
            self._hidden_until = time.monotonic() + b.poll_interval
            if self._newest() == sent:  # else the refresh this asks for tells
                self._install(0, self._counts[2])
        self._mutated()
        return WT(leased, 0)

    async def _leases_checked(self) -> None:
        """Before a settlement, release or extend: the declaration a reconnection (or the
        server's announcement) asked for has run, so the leases of a stream made again
        meanwhile are void, not acked as its messages of the same numbers. A work queue
        refused for its settings still settles."""
        self._notice()
        with contextlib.suppress(IncompatibleBrokerObject):
            await self._declared.ensure()

    def check_worker_name(self, worker: str) -> None:
        """Raise :class:`InvalidName` unless ``worker`` is a non-empty name within the
        length rule (a claim checks it before anything is sent)."""
        check_named_member(worker, "worker name")

    def check_claim_time(self, now: float) -> None:
        """Every time: the broker's leases run on its server's clock, not on ``now``."""
        return None

    async def _dead_letter(self, msg: Msg, attempts: int, reason: str) -> None:
        await nats_dead_letters.move(self._backend, msg, self.stream, self.dead_subject,
                                     attempts, reason)

    def _mutated(self) -> None:
        """After a claim or settlement: announce it to the other processes' mirrors and
        refresh this one."""
        self._backend.announce(self.notices)
        self._changed()

    async def settle(
        self, worker: str, delivery_id: int, outcome: Settlement, *,
        timeout: float | None = None,
    ) -> WT[Receipt | None]:
        await self._leases_checked()
        lease = self._leases.owned(worker, delivery_id)
        if lease is None:
            return WT(None, 0)
        msg, delivery = lease
        b = self._backend
        with self._leases.taken(delivery_id, lease):
            async with b.errors(f"settling a delivery of {self.stream}"):
                if outcome == "acked":
                    await b.ack(msg)
                elif delivery.attempt >= self.max_deliveries:
                    await self._dead_letter(msg, delivery.attempt, "nack")
                else:
                    await b.ack(msg, _nak(self.nack_delay))
        self._mutated()
        receipt = Receipt(self.name, delivery_id, delivery.item_id, worker, outcome, time.time())
        return WT(receipt, 0)

    async def release(
        self, worker: str, delivery_ids: list[int], *, timeout: float | None = None
    ) -> WT[int]:
        released = 0
        await self._leases_checked()
        for delivery_id in delivery_ids:
            lease = self._leases.owned(worker, delivery_id)
            if lease is not None:
                with self._leases.taken(delivery_id, lease):
                    async with self._backend.errors(
                            f"releasing a delivery of {self.stream}"):
                        await self._backend.ack(lease[0], b"-NAK")
                released += 1
        if released:
            self._mutated()
        return WT(released, 0)

    async def extend(
        self, worker: str, delivery_id: int, now: float | None, *,
        timeout: float | None = None,
    ) -> WT[bool]:
        await self._leases_checked()
        lease = self._leases.owned(worker, delivery_id)
        if lease is None:
            return WT(False, 0)
        msg, delivery = lease
        async with self._backend.errors(f"extending a lease of {self.stream}"):
            await msg.in_progress()
            await self._backend.nc.flush(timeout=int(self._backend.timeout))
        if delivery_id not in self._leases:  # settled meanwhile: nothing left to extend
            return WT(False, 0)
        renewed = Delivery(delivery.delivery_id, delivery.item_id, delivery.value, worker,
                           delivery.attempt, time.time() + self.visibility_timeout)
        self._leases[delivery_id] = (msg, renewed)
        return WT(True, 0)

    async def reap_expired(
        self, now: float | None, *, timeout: float | None = None
    ) -> WT[int]:
        """Forget this process's leases whose deadline passed; the server redelivers
        (or, after the last attempt, the next claim dead-letters) them on its own."""
        return WT(self._leases.expire(time.time()), 0)

    async def redrive(
        self, item_ids: Collection[int] | None = None, *, timeout: float | None = None
    ) -> WT[int]:
        """Publish dead letters (all, or those items) to the work queue again (as new
        items) and delete them from the dead-letter stream (:mod:`.nats_dead_letters`)."""
        await self._ready()
        moved = await nats_dead_letters.redrive(self._backend, self.dead_stream, self.subject,
                                                item_ids)
        if moved:
            self._mutated()
        return WT(moved, 0)


def _nak(delay: float) -> bytes:
    """The ``-NAK`` of a nack redelivered after ``delay`` seconds (at once for 0)."""
    return b"-NAK " + json.dumps({"delay": int(delay * 10**9)}).encode() if delay else b"-NAK"

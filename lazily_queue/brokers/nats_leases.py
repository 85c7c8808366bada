"""The leases a NATS work queue holds in this process: each live delivery with the
message that settles it, by ``delivery_id``, until its deadline passes (this process's
estimate of the server's ``ack_wait``: JetStream lists no client's leases).

A ``delivery_id`` is the consumer's delivery sequence, above the ids this process handed
out from consumers before: a consumer made again (``nats consumer rm`` and ``add`` with
the same settings, or a server restarted without having written its consumer's state)
numbers its deliveries from 1 again. The leases taken before are void once that is
seen: the server announces the consumer's deletion, a claim is handed the number of a
live lease, or the consumer, read after a claim, counts fewer deliveries than the
highest number this process was handed by then (its creation time cannot tell:
nats-server 2.9 moves it on every restart; nor can a number below the highest, which
concurrent claims may handle out of order). The new consumer's deliveries get ids none of them had,
so a settlement of an old lease is refused, never applied to another delivery. They are
void too once the stream is another (deleted and made again, or a server that lost its
data): its sequences, which an ack names, are other messages."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from nats.aio.msg import Msg

from ..core.work import Delivery

log = logging.getLogger(__name__)


class Leases(dict[int, tuple[Msg, Delivery]]):
    """``delivery_id`` -> ``(message, delivery)`` of this process's live leases."""

    def __init__(self, owner: str = "leases", consumer: str = "") -> None:
        super().__init__()
        #: How the warnings about void leases name the work queue and its consumer.
        self.owner, self.consumer = owner, consumer
        #: When the stream the leases were taken from was created (None: not known).
        self.created: Any = None
        #: The highest delivery sequence this process was handed by the consumer.
        self.last = 0
        #: What the delivery ids of that consumer's deliveries are above.
        self.base = 0
        #: How many times the leases were void.
        self.voids = 0

    def owned(self, worker: str, delivery_id: int) -> tuple[Msg, Delivery] | None:
        """The live lease ``delivery_id`` of ``worker``; ``None`` when it is not one (a
        lease whose deadline passed is forgotten)."""
        lease = self.get(delivery_id) if isinstance(delivery_id, int) else None
        if lease is None or lease[1].worker != worker:
            return None
        if lease[1].deadline < time.time():
            del self[delivery_id]
            return None
        return lease

    def void(self, why: str = "") -> int:
        """Forget every lease and the consumer's numbering, logging ``why`` when there
        were any: how many there were."""
        held = len(self)
        self.clear()
        self.base, self.last = self.base + self.last, 0
        self.voids += 1
        if why and held:
            log.warning("%s: %s (outside this library, or by a server restarted without "
                        "all its data): %d lease(s) of this process are void, their items "
                        "delivered again", self.owner, why, held)
        return held

    def stream(self, created: Any) -> bool:
        """Record the creation time of the stream as just declared; when it is not the
        one the leases came from (made again meanwhile), void them first: whether it was
        another."""
        other = self.created is not None and created != self.created
        if other:
            self.void(f"the stream of consumer {self.consumer} was made again (created at "
                      f"{created})")
        self.created = created
        return other

    def seen(self) -> tuple[int, int]:
        """What :meth:`counted` compares a consumer read from now on with."""
        return self.base, self.last

    def counted(self, consumer: Any, seen: tuple[int, int]) -> bool:
        """Whether ``consumer`` (its info), read after :meth:`seen` returned ``seen``,
        counts fewer deliveries than this process had been handed by then (it numbers
        from 1 again), its leases from before then void."""
        delivered = (consumer.delivered.consumer_seq if consumer.delivered else 0) or 0
        base, last = seen
        again = base == self.base and delivered < last
        if again:
            self.void(f"consumer {self.consumer} counts {delivered} deliveries, fewer than "
                      "it handed this process")
        return again

    def delivered(self, sequence: int) -> tuple[int, bool]:
        """The delivery id of delivery ``sequence`` just pulled, and whether it showed a
        consumer made again (the number of a live lease: no consumer hands one out
        twice), whose leases from before are then void."""
        again = self.base + sequence in self
        if again:
            self.void(f"consumer {self.consumer} handed out delivery {sequence} again")
        self.last = max(self.last, sequence)
        return self.base + sequence, again

    @contextlib.contextmanager
    def taken(self, delivery_id: int, lease: tuple[Msg, Delivery]) -> Iterator[None]:
        """Take lease ``delivery_id`` out while it is settled, so a settlement of it made
        meanwhile is refused; put it back when settling raised (its outcome unknown: the
        caller may settle it again), unless the leases were void meanwhile."""
        voids = self.voids
        del self[delivery_id]
        try:
            yield
        except BaseException:
            if self.voids == voids:
                self.setdefault(delivery_id, lease)
            raise

    def expire(self, now: float) -> int:
        """Forget the leases whose deadline passed by ``now`` (wall clock): how many."""
        expired = [d for d, (_, lease) in self.items() if lease.deadline < now]
        for delivery_id in expired:
            del self[delivery_id]
        return len(expired)

    def live(self) -> list[Delivery]:
        """The deliveries leased, by ``delivery_id``."""
        return [lease for _, lease in sorted(self.values(), key=lambda p: p[1].delivery_id)]

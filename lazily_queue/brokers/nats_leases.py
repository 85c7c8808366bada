"""The leases a NATS work queue holds in this process: each live delivery with the
message that settles it, by ``delivery_id``, until its deadline passes (this process's
estimate of the server's ``ack_wait``: JetStream lists no client's leases).

A ``delivery_id`` is the consumer's delivery sequence, above the ids this process handed
out from consumers before: a consumer made again (``nats consumer rm`` and ``add`` with
the same settings, or a server restarted without having written its consumer's state)
numbers its deliveries from 1 again. The leases taken before are void once that is
seen (a consumer created at another time, a delivery sequence at or below the last one
this process was handed), and the new consumer's deliveries get ids none of them had,
so a settlement of an old lease is refused, never applied to another delivery."""

from __future__ import annotations

import time
from typing import Any

from nats.aio.msg import Msg

from ..core.work import Delivery


class Leases(dict[int, tuple[Msg, Delivery]]):
    """``delivery_id`` -> ``(message, delivery)`` of this process's live leases."""

    def __init__(self) -> None:
        super().__init__()
        #: When the consumer the leases were taken from was created (None: not known).
        self.created: Any = None
        #: The highest delivery sequence this process was handed by that consumer.
        self.last = 0
        #: What the delivery ids of that consumer's deliveries are above.
        self.base = 0

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

    def void(self) -> int:
        """Forget every lease and the consumer they came from: how many there were."""
        held = len(self)
        self.clear()
        self.created, self.base, self.last = None, self.base + self.last, 0
        return held

    def consumer(self, created: Any) -> bool:
        """Record the creation time of the consumer as just read; when it is not the
        one the leases came from (made again meanwhile), void them first: whether it was
        another."""
        other = self.created is not None and created != self.created
        if other:
            self.void()
        self.created = created
        return other

    def delivered(self, sequence: int) -> tuple[int, bool]:
        """The delivery id of delivery ``sequence`` just pulled, and whether it showed a
        consumer made again (a sequence at or below the last one: it started over), whose
        leases from before are then void (its creation time unknown until read)."""
        again = sequence <= self.last
        if again:
            self.void()
        self.last = sequence
        return self.base + sequence, again

    def expire(self, now: float) -> int:
        """Forget the leases whose deadline passed by ``now`` (wall clock): how many."""
        expired = [d for d, (_, lease) in self.items() if lease.deadline < now]
        for delivery_id in expired:
            del self[delivery_id]
        return len(expired)

    def live(self) -> list[Delivery]:
        """The deliveries leased, by ``delivery_id``."""
        return [lease for _, lease in sorted(self.values(), key=lambda p: p[1].delivery_id)]

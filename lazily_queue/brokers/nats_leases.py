"""The leases a NATS work queue holds in this process: each live delivery with the
message that settles it, by ``delivery_id``, until its deadline passes (this process's
estimate of the server's ``ack_wait``: JetStream lists no client's leases)."""

from __future__ import annotations

import time

from nats.aio.msg import Msg

from ..core.work import Delivery


class Leases(dict[int, tuple[Msg, Delivery]]):
    """``delivery_id`` -> ``(message, delivery)`` of this process's live leases."""

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

    def expire(self, now: float) -> int:
        """Forget the leases whose deadline passed by ``now`` (wall clock): how many."""
        expired = [d for d, (_, lease) in self.items() if lease.deadline < now]
        for delivery_id in expired:
            del self[delivery_id]
        return len(expired)

    def live(self) -> list[Delivery]:
        """The deliveries leased, by ``delivery_id``."""
        return [lease for _, lease in sorted(self.values(), key=lambda p: p[1].delivery_id)]

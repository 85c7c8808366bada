"""NatsReads: what a :class:`~.nats_backend.NatsJetStreamStorage` reads from JetStream:
pulls from its consumers, acknowledgements and stored messages by sequence."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import nats.errors
import nats.js.errors as jserr
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from .errors import BrokerObjectLost
from .nats_requests import Replies

#: The header of a message a ``headers_only`` consumer delivered without its payload.
HEADERS_ONLY = "Nats-Msg-Size"
#: Seconds a ``no_wait`` pull may go without any answer before the consumer is looked
#: up (the server answers one from an existing consumer at once).
PULL_GRACE = 0.25


class NatsReads:
    """The reading half of :class:`~.nats_backend.NatsJetStreamStorage` (which sets
    these up)."""

    js: JetStreamContext
    replies: Replies
    address: str
    timeout: float

    async def pull(self, stream: str, consumer: str, n: int) -> list[Msg]:
        """Up to ``n`` messages the consumer has ready now (a ``no_wait`` pull); raises
        :class:`BrokerObjectLost` when the consumer does not exist. JetStream 2.9 leaves
        a pull from a missing consumer unanswered, so a pull that got no answer (no
        message, no status) within :data:`PULL_GRACE` asks for the consumer (and one
        that times out asks again). A consumer created after the pull was sent (again,
        by another process or this one's mirror) is pulled once more: it leaves its
        first pull unanswered."""
        sent = datetime.now(UTC)
        answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pulling = asyncio.ensure_future(self.replies.pull(stream, consumer, n, answered))
        try:
            watched: set[asyncio.Future[Any]] = {pulling, answered}
            await asyncio.wait(watched, timeout=min(PULL_GRACE, self.timeout),
                               return_when=asyncio.FIRST_COMPLETED)
            if not answered.done() and not pulling.done() and await self._created_since(
                    stream, consumer, sent) and not answered.done():
                return await self.replies.pull(stream, consumer, n)
            try:
                return await pulling
            except nats.errors.TimeoutError:
                if not await self._created_since(stream, consumer, sent):
                    raise
            return await self.replies.pull(stream, consumer, n)
        finally:
            if not pulling.done():  # its inbox is dropped in the background
                pulling.cancel()
            # its outcome is read also when the lookup above raised after it ended
            pulling.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def _created_since(self, stream: str, consumer: str, when: datetime) -> bool:
        """Whether ``consumer`` of ``stream`` was created at ``when`` or later; raises
        :class:`BrokerObjectLost` when it does not exist."""
        try:
            info = await self.js.consumer_info(stream, consumer)
        except jserr.NotFoundError:
            raise BrokerObjectLost(f"nats at {self.address}: consumer {consumer} of "
                                   f"stream {stream} does not exist") from None
        return info.created is not None and info.created >= when

    async def pull_declared(self, stream: str, consumer: str, n: int,
                            declare_again: Callable[[], Awaitable[None]],
                            edited: Callable[[], None]) -> list[Msg]:
        """:meth:`pull`; when the consumer is gone (deleted outside this library),
        ``declare_again()`` and pull once more: the stream keeps every message not
        acknowledged, and a new consumer delivers each of them. Messages delivered
        without their payload (an operator set the consumer to ``headers_only``) are
        read whole from the stream, and ``edited()`` has the setting put back."""
        try:
            msgs = await self.pull(stream, consumer, n)
        except BrokerObjectLost:
            await declare_again()
            msgs = await self.pull(stream, consumer, n)
        cut = [msg for msg in msgs if not msg.data and msg.headers
               and HEADERS_ONLY in msg.headers]
        if cut:
            edited()
        for msg in cut:
            raw = await self.js.get_msg(stream, seq=msg.metadata.sequence.stream, direct=True)
            msg.data = raw.data or b""
        return msgs

    async def ack(self, msg: Msg, kind: bytes = b"+ACK") -> None:
        """Acknowledge (``+ACK``, ``+TERM``, ``-NAK``) and wait for the server's answer
        (the acks made meanwhile share one round trip)."""
        await self.replies.ack(msg, kind)

    async def messages(self, stream: str, start: int, limit: int,
                       cache: dict[int, Any] | None = None) -> list[tuple[int, Any]]:
        """Up to ``limit`` stored messages from sequence ``start`` on, as
        ``(seq, raw message)`` (direct gets, each finding the next stored sequence)."""
        found: list[tuple[int, Any]] = []
        seq = max(1, start)
        while len(found) < limit:
            try:
                raw = await self.js.get_msg(stream, seq=seq, next=True, subject=">",
                                            direct=True)
            except jserr.NotFoundError:
                break
            at = int(raw.seq or seq)
            found.append((at, raw))
            seq = at + 1
        return found

"""NatsTopicStorage: a TopicCell backend on a JetStream limits stream, a durable consumer
per subscriber.

Offset ``k`` is the stream's sequence ``k + 1``; ``base`` is the first stored one. Each
subscriber is a durable pull consumer ``s_<id>`` (ack policy *all*, no
``max_ack_pending`` limit, lifted before the first advance from one declared with it)
started at the tail when it subscribes (replay from a sequence); its cursor is its ack
floor, and its description holds ``{"id", "durability", "connected"}``. Advancing pulls
the next messages from the cursor (when a pull that never returned left messages
delivered but unacknowledged, they are delivered again first: ``nats_topic_pulls``)
and acknowledges the last; ``gc`` purges below the lowest durable cursor, which moves
a lagging ephemeral subscriber's ack floor to the new base (the clamp). A consumer is
changed in place, never deleted and created again (``nats_subscribers``); one deleted
outside this library raises :class:`~.errors.SubscriberConsumerLost` on an advance.

The mirror holds the retained log and every subscription (like a Raft member's
replica); it refreshes incrementally. Capabilities: ``observable``, ``dedup``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import nats.js.errors as jserr
from nats.js.api import ConsumerInfo, StorageType

from ..core.topic import (
    Durability,
    SubscribeOutcome,
    TopicTransition,
    check_subscriber,
    parse_durability,
)
from ..errors import shown
from ..names import check_named_member
from ..storage.attempts import bounds_timeouts
from ..storage.capabilities import StorageCapabilities
from .codec import decode, encode
from .errors import BrokerObjectLost, IncompatibleBrokerObject, SubscriberConsumerLost
from .nats_consumer_settings import astray
from .nats_limits import topic_stream_problem
from .nats_names import object_token, token
from .nats_streams import StreamDeclared
from .nats_subscribers import (
    CONSUMER_CREATE_REFUSED,
    GC_PAUSES,
    SETTINGS,
    check_described,
    check_unclaimed,
    consumer_config,
    described_by,
    description,
    lift,
    lost_error,
    purge_point,
    subscribers,
    taken_error,
    update,
)
from .nats_topic_pulls import bounds, pull_at_cursor, redeliver, seq
from .topic_mirror import Record, TopicMirror

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage

T = TypeVar("T")
NOBODY: frozenset[str] = frozenset()
log = logging.getLogger(__name__)


@bounds_timeouts
class NatsTopicStorage(StreamDeclared, TopicMirror, Generic[T]):
    """A broadcast log on JetStream: the TopicStorage seam, observable."""

    kind = "topic"
    capabilities = StorageCapabilities(observable=True, lifecycle=True, dedup=True)

    def __init__(self, backend: NatsJetStreamStorage, name: str) -> None:
        self._backend = backend
        tok = object_token(name, len("LQ_T_"))
        self.stream, self.subject = f"LQ_T_{tok}", f"lq.t.{tok}"
        #: Subscribers whose consumer was last read with settings to put back.
        self._limited: set[str] = set()
        self._subscribed = False
        self._noticing = backend.outages.check
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"nats topic {shown(name)}")

    def __repr__(self) -> str:
        return f"NatsTopicStorage({self.name!r}, base={self._base}, end={self._end})"

    async def _create_stream(self) -> Any:
        """The topic's stream, added when it does not exist (or read back when another
        process adds it at the same moment)."""
        return await self._backend.stream(
            self.stream, holds=("topic", self.name), again=self._created is not None,
            subjects=[self.subject],
            storage=StorageType.FILE, allow_direct=True)

    async def _declare(self) -> None:
        b = self._backend
        async with b.errors(f"declaring topic {self.stream}"):
            info = await self._create_stream()
            problem = topic_stream_problem(info.config, self.stream, self.subject)
            if problem is not None:
                raise IncompatibleBrokerObject(f"nats at {b.address}: {problem}")
            self._created = info.created
            if self._subscribed:
                return
            self._subscribed = True
            for subject in (self.subject, f"$JS.EVENT.ADVISORY.CONSUMER.*.{self.stream}.*",
                            f"$JS.EVENT.METRIC.CONSUMER.ACK.{self.stream}.*"):
                await b.subscribe(subject, self._changed)
            # The stream deleted, made again or changed (announced, or while disconnected):
            # declared and checked again, as where the topic is opened.
            await b.subscribe(f"$JS.EVENT.ADVISORY.STREAM.*.{self.stream}", self.redeclare)
            b.outages.listeners.append(self.redeclare)

    async def _consumers(self) -> dict[str, tuple[Record, ConsumerInfo]]:
        found = await subscribers(self._backend.js, self.stream)
        for sid, (_, info) in found.items():
            if not astray(info.config, SETTINGS):
                self._limited.discard(sid)
            else:
                self._limited.add(sid)
        return found

    async def _read(self) -> None:
        b = self._backend
        async with b.errors(f"reading topic {self.stream}"):
            info, anew = await self._stream_declared(self.stream)
            state = info.state
            consumers = await self._consumers()
            base, end = bounds(state)
            if anew or base < self._base or base > self._end or end < self._end:
                elements: list[Any] = []
                start = base
            else:
                elements = self._elements[base - self._base:]
                start = self._end
            if end > start:
                raws = await b.messages(self.stream, start + 1, end - start)
                elements += [decode(raw.data or b"") for _, raw in raws]
        self._install(base, end, elements, {sid: rec for sid, (rec, _) in consumers.items()})

    # -- operations ----------------------------------------------------------------------

    def _consumer_name(self, subscriber: str) -> str:
        return f"s_{token(subscriber, 2)}"

    async def _put_consumer(self, subscriber: str, durability: str, connected: bool,
                            start: int) -> None:
        await self._backend.js.add_consumer(self.stream, consumer_config(
            self._consumer_name(subscriber), subscriber, durability, connected, start))

    async def _lift(self, subscriber: str) -> None:
        """Put back the settings of ``subscriber``'s consumer
        (:func:`.nats_subscribers.lift`); :class:`SubscriberConsumerLost` when it is gone."""
        if not await lift(self._backend.js, self.stream, self._consumer_name(subscriber)):
            raise self._lost_error(subscriber)
        self._limited.discard(subscriber)

    async def _update(self, subscriber: str, info: ConsumerInfo, durability: str,
                      connected: bool) -> None:
        """Mark ``subscriber``'s consumer connected or not, in place (see
        :func:`.nats_subscribers.update`)."""
        if not await update(self._backend.js, self.stream, info,
                            description(subscriber, durability, connected)):
            raise self._lost_error(subscriber)

    def _lost_error(self, subscriber: str) -> SubscriberConsumerLost:
        return lost_error(self._backend.address, self.name, subscriber,
                          self._consumer_name(subscriber), self.stream)

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        check_named_member(check_subscriber(subscriber), "subscriber name")
        check_described(subscriber)
        kind = parse_durability(durability)
        await self._ready()
        b = self._backend
        async with b.errors(f"subscribing {shown(subscriber)} to {self.stream}"):
            consumers = await self._consumers()
            found = consumers.get(subscriber)
            if found is None:
                check_unclaimed(b.address, self.stream, self._consumer_name(subscriber),
                                subscriber, consumers)
                state = (await b.js.stream_info(self.stream)).state
                outcome = SubscribeOutcome.Subscribed
                try:
                    await self._put_consumer(subscriber, kind.value, True, state.last_seq + 1)
                except jserr.APIError as exc:
                    if exc.err_code not in CONSUMER_CREATE_REFUSED:
                        raise
                    if subscriber not in await self._consumers():  # the name is taken
                        raise taken_error(b.address, self.stream,
                                          self._consumer_name(subscriber), subscriber) from None
                    # another process subscribed it meanwhile, at another tail: theirs
                    outcome = SubscribeOutcome.AlreadyConnected
                self._vanished.pop(subscriber, None)
            elif found[0][1]:
                outcome = SubscribeOutcome.AlreadyConnected
            else:
                await self._connect(subscriber, found[0], found[1])
                outcome = SubscribeOutcome.Reconnected
        await self.sync()
        return TopicTransition(outcome, NOBODY)

    async def _connect(self, subscriber: str, rec: Record, info: ConsumerInfo) -> None:
        """Mark it connected; what a crash left delivered and not acknowledged comes
        again, in order."""
        await self._update(subscriber, info, rec[0], True)
        delivered = info.delivered.stream_seq if info.delivered is not None else None
        if (delivered or 0) > rec[2]:
            await redeliver(self._backend, self.stream, info)

    async def _connection(self, subscriber: str, connect: bool) -> TopicTransition[bool]:
        check_subscriber(subscriber)
        await self._ready()
        b = self._backend
        async with b.errors(f"changing subscriber {shown(subscriber)} of {self.stream}"):
            found = (await self._consumers()).get(subscriber)
            if found is None or found[0][1] == connect:
                return TopicTransition(False, NOBODY)
            rec, info = found
            if connect:
                await self._connect(subscriber, rec, info)
            elif rec[0] == Durability.EPHEMERAL.value:
                try:
                    await b.js.delete_consumer(self.stream, info.name)
                except jserr.NotFoundError:  # another process disconnected it meanwhile
                    return TopicTransition(False, NOBODY)
            else:
                await self._update(subscriber, info, rec[0], False)
        await self.sync()
        return TopicTransition(True, NOBODY)

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self._connection(subscriber, True)

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self._connection(subscriber, False)

    async def publish(self, value: T, *, timeout: float | None = None) -> TopicTransition[int]:
        return await self._publish(value, None)

    async def publish_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        return await self._publish(value, msg_id)

    async def _publish(self, value: T, msg_id: str | None) -> TopicTransition[int]:
        data = encode(value)
        await self._ready()
        b = self._backend
        async with b.errors(f"publishing to {self.stream}"):
            ack = await self._send(self.stream, self.subject, data, msg_id)
        if not ack.duplicate:
            self._changed()
        return TopicTransition(int(ack.seq) - 1, NOBODY)

    async def _advance(self, subscriber: str, count: int,
                       stop: int | None = None) -> list[Any] | None:
        """Consume up to ``count`` elements (none past offset ``stop``: the cursor seen
        here may be behind): their values, or ``None`` when offline."""
        check_subscriber(subscriber)
        await self._ready()
        rec = self._subs.get(subscriber)
        if rec is None or not rec[1]:
            await self.sync()
            rec = self._subs.get(subscriber)
            if rec is None or not rec[1]:
                lost = self.lost(subscriber)
                if lost is not None:
                    raise lost
                return None
        b = self._backend
        doing = f"advancing {shown(subscriber)} on {self.stream}"
        async with b.errors(doing):
            try:
                if subscriber in self._limited:
                    await self._lift(subscriber)
                msgs = await pull_at_cursor(
                    b, self.stream, self._consumer_name(subscriber), count, rec[2],
                    rec[2] < self._end, doing,
                    lambda info: (described_by(info) or ("",))[0] == subscriber)
            except BrokerObjectLost:
                await self.sync()
                raise self.lost(subscriber) or self._lost_error(subscriber) from None
            if stop is not None and msgs and seq(msgs[-1]) > stop:
                await b.replies.ack_many([m for m in msgs if seq(m) > stop], b"-NAK")
                msgs = [m for m in msgs if seq(m) <= stop]
            if msgs:
                await b.ack(msgs[-1])
        if msgs:
            self._moved(subscriber, seq(msgs[-1]))
        return [decode(m.data) for m in msgs]

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]:
        values = await self._advance(subscriber, 1)
        return TopicTransition(values[0] if values else None, NOBODY)

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {shown(offset)}")
        await self._ready()
        cursor = self.cursor(subscriber)
        if cursor is None:
            return TopicTransition(None, NOBODY)
        target = min(offset, self._end)
        if target > cursor:
            values = await self._advance(subscriber, target - cursor, target)
            if values is None:
                return TopicTransition(None, NOBODY)
            await self.sync()
        return TopicTransition(self.cursor(subscriber), NOBODY)

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]:
        await self._ready()
        b = self._backend
        async with b.errors(f"collecting {self.stream}"):
            for pause in GC_PAUSES:
                await asyncio.sleep(pause)
                state = (await b.js.stream_info(self.stream)).state
                consumers = await self._consumers()
                base, end = bounds(state)
                frontier, out = purge_point(consumers, end)
                if frontier <= base:
                    return TopicTransition(0, NOBODY)
                if not out:
                    break
            else:
                log.info("%r: gc collects nothing now: a purge would drop what %s holds "
                         "delivered past the new base", self, out)
                return TopicTransition(0, NOBODY)
            # it moves every ack floor up to it: the clamp of lagging ephemeral subscribers
            await b.js.purge_stream(self.stream, seq=frontier + 1)
        await self.sync()
        return TopicTransition(frontier - base, NOBODY)

    async def restore(self, snapshot: dict[str, Any], *, timeout: float | None = None) -> None:
        """Replace the whole topic with ``snapshot`` (``TopicCore.snapshot()`` shape):
        administration and seeding."""
        await self._ready()
        b = self._backend
        base = int(snapshot.get("base_offset", 0))
        async with b.errors(f"restoring {self.stream}"):
            info = await b.js.stream_info(self.stream)
            if info.state.last_seq or info.state.consumer_count:
                await b.js.delete_stream(self.stream)
                self._created = (await self._create_stream()).created
            if base:
                await b.js.purge_stream(self.stream, seq=base + 1)
            for value in snapshot.get("elements", []):
                await b.publish(self.subject, encode(value))
            for sid, rec in snapshot.get("subscriptions", {}).items():
                check_subscriber(sid)
                durability = parse_durability(rec["durability"]).value
                await self._put_consumer(sid, durability, bool(rec["connected"]),
                                         int(rec["cursor"]) + 1)
        self._base = self._end = 0
        self._elements = []
        self._subs = {}
        await self.sync()

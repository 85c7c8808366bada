"""RedisTopicStorage: a TopicCell backend on a Redis stream, a consumer group per subscriber.

The log is a stream; offsets count entries from the topic's first publish (``base`` and
``end`` are kept beside it). Each subscriber has a consumer group ``s:<id>`` whose
position is its cursor (reading with ``XREADGROUP ... NOACK`` advances it) and a record
``durability|connected|cursor`` in the subscriptions hash; subscribe, disconnect,
advance and gc are Lua scripts. ``gc`` trims the stream (``XTRIM MINID``) below the
lowest durable cursor and clamps lagging ephemeral cursors, as the in-process topic does.
A group destroyed outside this library is made again at its record's cursor; a stream
that lost entries (deleted or trimmed outside) raises
:class:`~lazily_queue.brokers.errors.BrokerObjectLost` on an advance or ``gc``; a
durable subscriber whose record was deleted outside while known (``FLUSHALL``, ``DEL``
of the topic's keys) raises :class:`~lazily_queue.brokers.errors.SubscriberConsumerLost`.

The mirror holds the retained log and every record (like a Raft member's replica), so
the readers (each subscriber's unread suffix) need no round trip; it refreshes
incrementally (only entries after the last one it holds).
Capabilities: ``observable``, ``dedup``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

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
from .batching import Coalescer
from .codec import decode, encode
from .errors import SubscriberConsumerLost
from .mirrors import whole
from .redis_once_scripts import ONCE_WINDOW_MS
from .topic_mirror import Record, TopicMirror

if TYPE_CHECKING:
    from .redis_backend import RedisStreamsStorage

T = TypeVar("T")
NOBODY: frozenset[str] = frozenset()

def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _record(raw: Any) -> Record | None:
    """A subscription record ``durability|connected|cursor``, or ``None`` when ``raw`` is
    not one (the scripts read such a field as no subscription too)."""
    parts = _text(raw).split("|")
    if len(parts) != 3 or parts[0] not in ("durable", "ephemeral") or parts[1] not in ("0", "1"):
        return None
    cursor = whole(parts[2], 0)
    return None if cursor is None else (parts[0], parts[1] == "1", cursor)


@bounds_timeouts
class RedisTopicStorage(TopicMirror, Generic[T]):
    """A broadcast log on a Redis stream: the TopicStorage seam, observable."""

    kind = "topic"
    capabilities = StorageCapabilities(observable=True, lifecycle=True, dedup=True)

    def __init__(self, backend: RedisStreamsStorage, name: str) -> None:
        self._backend = backend
        self._keys = [backend.key("t", name, part) for part in ("stream", "subs", "meta")]
        self._channel = backend.key("t", name, "changes")
        self._last_id = "-"
        self._publishes: Coalescer[bytes, Any] = Coalescer(self._publish_batch)
        super().__init__(name, poll_interval=backend.poll_interval,
                         label=f"redis topic {shown(name)}")
        backend.listen(self._channel, self._keys[0], self._changed)

    def __repr__(self) -> str:
        return f"RedisTopicStorage({self.name!r}, base={self._base}, end={self._end})"

    async def _declare(self) -> None:
        await self._backend.declare("TOPIC_DECLARE", self._keys, [])

    async def _read(self) -> None:
        base, end, flat, entries = await self._backend.run(
            "TOPIC_READ", self._keys, [self._last_id])
        base, end = int(base), int(end)
        keep = self._last_id != "-" and base >= self._base
        elements = self._elements[base - self._base:] if keep else []
        elements += [self._value(fields) for _, fields in entries]
        if len(elements) != end - base and self._last_id != "-":
            self._last_id = "-"  # out of step (keys replaced): read everything again
            await self._read()
            return
        if entries:
            self._last_id = _text(entries[-1][0])
        subs: dict[str, Record] = {}
        for i in range(0, len(flat) - 1, 2):
            record = _record(flat[i + 1])
            if record is not None:  # else not a record this library wrote: not a subscriber
                subs[_text(flat[i])] = record
        self._install(base, end, elements, subs)

    @staticmethod
    def _value(fields: Any) -> Any:
        for i in range(0, len(fields), 2):
            if _text(fields[i]) == "v":
                return decode(fields[i + 1])
        return decode(b"")

    # -- reads (the mirror) --------------------------------------------------------------

    def read(self, subscriber: str) -> Any:
        rec = self._subs.get(subscriber)
        if rec is None or not rec[1]:
            return None
        index = rec[2] - self._base
        return self._elements[index] if 0 <= index < len(self._elements) else None

    # -- operations ----------------------------------------------------------------------

    async def subscribe(
        self, subscriber: str, durability: Durability | str = Durability.DURABLE, *,
        timeout: float | None = None,
    ) -> TopicTransition[SubscribeOutcome]:
        check_named_member(check_subscriber(subscriber), "subscriber name")
        kind = parse_durability(durability)
        await self._ready()
        outcome = await self._backend.run(
            "TOPIC_SUBSCRIBE", self._keys, [subscriber, kind.value, self._channel])
        self._vanished.pop(subscriber, None)
        await self.sync()
        return TopicTransition(SubscribeOutcome[_text(outcome)], NOBODY)

    def _lost_error(self, subscriber: str) -> SubscriberConsumerLost:
        stream, subs = self._keys[:2]
        return SubscriberConsumerLost(
            f"redis at {self._backend.address}: topic {shown(self.name)}: subscriber "
            f"{shown(subscriber)}'s record in {subs} (its cursor) was deleted while the "
            "subscriber was known (outside this library: FLUSHALL, FLUSHDB, DEL of the "
            "topic's keys, HDEL, a server restarted without its data; or the topic was "
            "restored): its cursor is gone; subscribe it again (await topic.subscribe("
            f"{subscriber!r}): it starts at the tail, elements published meanwhile are not "
            f"delivered to it), or restore the topic ({stream} and {subs}) from a backup")

    async def _connection(self, subscriber: str, want: str) -> TopicTransition[bool]:
        check_subscriber(subscriber)
        await self._ready()
        done = await self._backend.run(
            "TOPIC_CONNECTION", self._keys, [subscriber, want, self._channel])
        if done:
            await self.sync()
        return TopicTransition(bool(done), NOBODY)

    async def reconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self._connection(subscriber, "connect")

    async def disconnect(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[bool]:
        return await self._connection(subscriber, "disconnect")

    async def publish(self, value: T, *, timeout: float | None = None) -> TopicTransition[int]:
        data = encode(value)
        await self._ready()
        offset = await self._publishes.call(data)
        self._changed()
        return TopicTransition(int(offset), NOBODY)

    async def publish_once(
        self, value: T, msg_id: str, *, timeout: float | None = None
    ) -> TopicTransition[int]:
        data = encode(value)
        await self._ready()
        keys = [*self._keys, self._backend.once_key("t", self.name, msg_id)]
        repeat, answer = await self._backend.run(
            "TOPIC_PUBLISH_ONCE", keys, [self._channel, data, ONCE_WINDOW_MS])
        if repeat:
            return TopicTransition(int(answer), NOBODY)
        self._changed()
        return TopicTransition(int(answer[0]), NOBODY)

    async def _publish_batch(self, values: list[bytes]) -> list[Any]:
        """The publishes made meanwhile, in order, in one script call."""
        return list(await self._backend.run("TOPIC_PUBLISH", self._keys,
                                            [self._channel, *values]))

    async def _advance(self, subscriber: str, target: int) -> list[Any] | None:
        check_subscriber(subscriber)
        await self._ready()
        result = await self._backend.run(
            "TOPIC_ADVANCE", self._keys, [subscriber, target, self._channel])
        if not isinstance(result, list):
            if self._subs.get(subscriber, ("", False, 0))[1]:  # shown here as connected
                await self.sync()
            lost = self.lost(subscriber)
            if lost is not None:
                raise lost
            return None
        if len(result) > 1 and result[1] is not None:
            self._moved(subscriber, int(result[0]))
            return list(result)
        return [result[0]]

    async def poll(
        self, subscriber: str, *, timeout: float | None = None
    ) -> TopicTransition[T | None]:
        result = await self._advance(subscriber, -1)
        if result is None or len(result) < 2:
            return TopicTransition(None, NOBODY)
        value: T = decode(result[1])
        return TopicTransition(value, NOBODY)

    async def advance_to(
        self, subscriber: str, offset: int, *, timeout: float | None = None
    ) -> TopicTransition[int | None]:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative int, got {shown(offset)}")
        result = await self._advance(subscriber, offset)
        return TopicTransition(None if result is None else int(result[0]), NOBODY)

    async def gc(self, *, timeout: float | None = None) -> TopicTransition[int]:
        await self._ready()
        removed = await self._backend.run("TOPIC_GC", self._keys, [self._channel])
        await self.sync()
        return TopicTransition(int(removed), NOBODY)

    async def restore(self, snapshot: dict[str, Any], *, timeout: float | None = None) -> None:
        """Replace the whole topic with ``snapshot`` (``TopicCore.snapshot()`` shape):
        administration and seeding."""
        elements = [encode(v) for v in snapshot.get("elements", [])]
        quads: list[Any] = []
        for sid, rec in snapshot.get("subscriptions", {}).items():
            check_subscriber(sid)
            durability = parse_durability(rec["durability"]).value
            quads += [sid, durability, "1" if rec["connected"] else "0", int(rec["cursor"])]
        await self._ready()
        base = int(snapshot.get("base_offset", 0))
        await self._backend.run("TOPIC_RESTORE", self._keys,
                                [base, self._channel, len(elements), *elements, *quads])
        self._last_id = "-"
        self._subs = {}
        await self.sync()

"""A topic subscriber's JetStream consumer: its configuration and description, its
change in place, what a purge of its stream would drop, and the errors that say it is
gone or that its name is taken or too long.

JetStream 2.9 updates a durable consumer given the same name and a configuration that
differs only in what may change (description, ``max_ack_pending``, ``ack_wait``,
``max_deliver``, ``sample_freq``...; not the deliver policy, start sequence or ack
policy), keeping its ack floor and deliveries: a subscriber's consumer is changed that
way, never deleted and created again, so no crash or concurrent change can lose it.
An operator's change to its settings is put back before the next advance
(:data:`SETTINGS`, :mod:`.nats_consumer_settings`).

A purge (``gc``) moves every consumer's ack floor up to the new base, and drops every
consumer's deliveries not acknowledged: those past the new base would never be
delivered again, so ``gc`` purges only once no consumer holds any (:func:`purge_point`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import nats.js.errors as jserr
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy

from ..core.topic import Durability
from ..errors import InvalidName, shown
from .errors import IncompatibleBrokerObject, SubscriberConsumerLost
from .nats_consumer_settings import PUT_BACK, put_back
from .nats_topic_pulls import cursor_of
from .topic_mirror import Record

#: Most bytes of a consumer's description (JetStream refuses longer ones).
DESCRIPTION_LIMIT = 4096
#: JetStream's answers to a consumer create that met another creator of the same name:
#: the update it became was refused (another start sequence), or the name was taken.
CONSUMER_CREATE_REFUSED = frozenset({10012, 10013})
#: What a subscriber's consumer is given, and given back when changed outside: no
#: back-off nor ``max_deliver`` limit besides :data:`.nats_consumer_settings.PUT_BACK`.
SETTINGS: Mapping[str, Any] = {**PUT_BACK, "backoff": None, "max_deliver": -1}
#: Pauses (seconds) before each look of ``gc`` at the consumers, waiting for advances
#: under way to acknowledge what they pulled.
GC_PAUSES = (0.0, 0.01, 0.05)


async def subscribers(js: JetStreamContext,
                      stream: str) -> dict[str, tuple[Record, ConsumerInfo]]:
    """The consumers of ``stream`` this library made, by subscriber: its record (the
    cursor is the consumer's ack floor) and the consumer's info."""
    found: dict[str, tuple[Record, ConsumerInfo]] = {}
    for info in await js.consumers_info(stream):
        described = described_by(info)
        if described is not None:  # else a consumer this library did not make
            sid, durability, connected = described
            found[sid] = ((durability, connected, cursor_of(info)), info)
    return found


def purge_point(consumers: dict[str, tuple[Record, ConsumerInfo]],
                end: int) -> tuple[int, list[str]]:
    """The offset ``gc`` may purge below (the lowest durable cursor; ``end`` when there
    is none), and the subscribers whose consumer has messages past it delivered and not
    acknowledged (an advance under way, or a pull whose reply was lost)."""
    durable = [rec[2] for rec, _ in consumers.values() if rec[0] == Durability.DURABLE.value]
    frontier = min(durable) if durable else end
    return frontier, [sid for sid, (_, info) in consumers.items()
                      if info.num_ack_pending and info.delivered is not None
                      and (info.delivered.stream_seq or 0) > frontier]


def description(subscriber: str, durability: str, connected: bool) -> str:
    """A subscriber's consumer description: its id, durability and whether connected."""
    return json.dumps({"id": subscriber, "durability": durability, "connected": connected},
                      ensure_ascii=False)


def described_by(info: ConsumerInfo) -> tuple[str, str, bool] | None:
    """The subscriber, durability and connected flag the description of ``info`` holds;
    ``None`` for a consumer this library did not make."""
    try:
        meta = json.loads(info.config.description or "")
        return str(meta["id"]), str(meta["durability"]), bool(meta["connected"])
    except (ValueError, KeyError, TypeError):
        return None


def check_described(subscriber: str) -> None:
    """Raise :class:`InvalidName` when ``subscriber``'s consumer description would be
    longer than JetStream takes."""
    size = len(description(subscriber, Durability.EPHEMERAL.value, False).encode())
    if size > DESCRIPTION_LIMIT:
        raise InvalidName(
            f"subscriber name {shown(subscriber)} is too long for NATS JetStream: its "
            f"consumer's description would take {size} bytes, over the server's limit "
            f"of {DESCRIPTION_LIMIT}; use a shorter name (or fewer characters outside "
            "ASCII)")


def consumer_config(name: str, subscriber: str, durability: str, connected: bool,
                    start: int) -> ConsumerConfig:
    """The consumer ``name`` of ``subscriber``, delivering from sequence ``start``."""
    return ConsumerConfig(
        durable_name=name, description=description(subscriber, durability, connected),
        ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=max(1, start), sample_freq="100%", **SETTINGS)


def check_unclaimed(address: str, stream: str, name: str, subscriber: str,
                    consumers: dict[str, tuple[Record, ConsumerInfo]]) -> None:
    """Raise :class:`IncompatibleBrokerObject` when the consumer ``name`` that
    ``subscriber`` would get is another subscriber's (two ids mapped to one name)."""
    for other, (_, info) in consumers.items():
        if info.name == name:
            raise IncompatibleBrokerObject(
                f"nats at {address}: consumer {name} of {stream} belongs to subscriber "
                f"{shown(other)}; subscriber {shown(subscriber)} maps to the same consumer "
                "name: use another id")


async def lift(js: JetStreamContext, stream: str, name: str) -> bool:
    """Put back the :data:`SETTINGS` of the consumer ``name`` (one declared with a
    ``max_ack_pending`` limit, or changed outside): the server's config is read again,
    so only those change. Creates nothing: ``False`` when the consumer is gone (one
    deleted meanwhile, which the update made again, at its first start, is deleted
    again)."""
    try:
        info = await js.consumer_info(stream, name)
    except jserr.NotFoundError:
        return False
    made = await put_back(js, stream, info.config, **SETTINGS)
    if made is not None and made.created != info.created:
        with contextlib.suppress(jserr.NotFoundError):
            await js.delete_consumer(stream, made.name)
        return False
    return True


async def update(js: JetStreamContext, stream: str, info: ConsumerInfo, text: str) -> bool:
    """Give the consumer of ``info`` (as read) the description ``text``, in place
    (with its :data:`SETTINGS`); ``False`` when it had been deleted since it was read:
    the update then made a new one, which is deleted again."""
    made = await js.add_consumer(stream, dataclasses.replace(
        info.config, description=text, **SETTINGS))
    if made.created == info.created:
        return True
    with contextlib.suppress(jserr.NotFoundError):
        await js.delete_consumer(stream, made.name)
    return False


def taken_error(address: str, stream: str, consumer: str,
                subscriber: str) -> IncompatibleBrokerObject:
    """The error of a subscribe whose consumer name another consumer holds, one this
    library did not make (or whose description was changed outside it)."""
    return IncompatibleBrokerObject(
        f"nats at {address}: consumer {consumer} of stream {stream}, subscriber "
        f"{shown(subscriber)}'s, exists with settings this library did not give it (made "
        "or changed outside it); nothing was changed: delete it (`nats consumer rm "
        f"{stream} {consumer}`) and subscribe again")


def lost_error(address: str, topic: str, subscriber: str, consumer: str,
               stream: str) -> SubscriberConsumerLost:
    """The error of a subscriber whose consumer is gone while it was known."""
    return SubscriberConsumerLost(
        f"nats at {address}: topic {shown(topic)}: subscriber {shown(subscriber)}'s "
        f"consumer {consumer} of stream {stream} was deleted while the subscriber was known "
        "(outside this library: nats consumer rm or stream rm, another program, a server "
        "that lost its data; or the topic was restored): its cursor is gone; subscribe it "
        "again (await topic.subscribe("
        f"{subscriber!r}): it starts at the tail, elements published meanwhile are not "
        "delivered to it), or restore the topic from a snapshot")

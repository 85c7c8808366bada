"""A topic subscriber's JetStream consumer: its description, its change in place, what
a purge of its stream would drop, and the error that says it is gone.

JetStream 2.9 updates a durable consumer given the same name and a configuration that
differs only in what may change (description, ``max_ack_pending``, ``ack_wait``,
``max_deliver``, ``sample_freq``...; not the deliver policy, start sequence or ack
policy), keeping its ack floor and deliveries: a subscriber's consumer is changed that
way, never deleted and created again, so no crash or concurrent change can lose it.

A purge (``gc``) moves every consumer's ack floor up to the new base, and drops every
consumer's deliveries not acknowledged: those past the new base would never be
delivered again, so ``gc`` purges only once no consumer holds any (:func:`held_past`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json

import nats.js.errors as jserr
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo

from ..errors import shown
from .errors import SubscriberConsumerLost
from .nats_requests import UNLIMITED_ACK_PENDING

#: Most bytes of a consumer's description (JetStream refuses longer ones).
DESCRIPTION_LIMIT = 4096
#: JetStream's answers to a consumer create that met another creator of the same name:
#: the update it became was refused (another start sequence), or the name was taken.
CONSUMER_CREATE_REFUSED = frozenset({10012, 10013})
#: Pauses (seconds) before each look of ``gc`` at the consumers, waiting for advances
#: under way to acknowledge what they pulled.
GC_PAUSES = (0.0, 0.01, 0.05)


def held_past(consumers: dict[str, ConsumerInfo], base: int) -> list[str]:
    """The subscribers whose consumer has messages past offset ``base`` delivered and
    not acknowledged (an advance under way, or a pull whose reply was lost)."""
    return [sid for sid, info in consumers.items()
            if info.num_ack_pending and info.delivered is not None
            and (info.delivered.stream_seq or 0) > base]


def description(subscriber: str, durability: str, connected: bool) -> str:
    """A subscriber's consumer description: its id, durability and whether connected."""
    return json.dumps({"id": subscriber, "durability": durability, "connected": connected},
                      ensure_ascii=False)


async def update(js: JetStreamContext, stream: str, info: ConsumerInfo, text: str) -> bool:
    """Give the consumer of ``info`` (as read) the description ``text``, in place
    (without a ``max_ack_pending`` limit); ``False`` when it had been deleted since it
    was read: the update then made a new one, which is deleted again."""
    made = await js.add_consumer(stream, dataclasses.replace(
        info.config, description=text, max_ack_pending=UNLIMITED_ACK_PENDING))
    if made.created == info.created:
        return True
    with contextlib.suppress(jserr.NotFoundError):
        await js.delete_consumer(stream, made.name)
    return False


def lost_error(address: str, topic: str, subscriber: str, consumer: str,
               stream: str) -> SubscriberConsumerLost:
    """The error of a subscriber whose consumer is gone while it was known."""
    return SubscriberConsumerLost(
        f"nats at {address}: topic {shown(topic)}: subscriber {shown(subscriber)}'s "
        f"consumer {consumer} of stream {stream} was deleted while the subscriber was known "
        "(outside this library: nats consumer rm, another program; or the topic was "
        f"restored): its cursor is gone; subscribe it again (await topic.subscribe("
        f"{subscriber!r}): it starts at the tail, elements published meanwhile are not "
        "delivered to it), or restore the topic from a snapshot")

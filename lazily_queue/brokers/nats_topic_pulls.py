"""Pulls of a topic subscriber's messages that start at its cursor.

A subscriber's consumer (ack policy *all*) delivers past messages it delivered but that
were never acknowledged: a pull whose reply was lost or timed out, or one another
process is still handling. Acknowledging a later message would acknowledge those too,
so the subscriber would skip elements no advance returned. :func:`pull_at_cursor`
acknowledges nothing; it returns consecutive messages only when they start at the
cursor, and otherwise has the consumer deliver again, in order, every message it
delivered past its ack floor (a ``-NAK`` to each: the consumer is not recreated) and
pulls again.

With several advances of one subscriber at once (any processes), the cursor never
passes an element that no advance returned; an element may be returned more than once
(to the same process too, when another one had it delivered again meanwhile), as an
at-least-once topic allows.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import nats.js.errors as jserr
from nats.aio.msg import Msg
from nats.js.api import ConsumerInfo

from .errors import BrokerObjectLost, BrokerUnavailable

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage

#: Pulls (each after a redelivery) before an advance gives up.
ATTEMPTS = 8
#: Pauses (seconds, each lengthened at random by up to as much again) between reads of
#: the consumer before messages delivered behind the pulled ones are taken as never to
#: be acknowledged (not another advance's, acknowledged soon).
PAUSES = (0.0, 0.005, 0.01, 0.02)


def cursor_of(info: ConsumerInfo) -> int:
    """The next offset the consumer's subscriber reads: its ack floor, which a purge
    moves up (the server reports none before the first ack or purge), and never below
    its start."""
    floor = int(info.ack_floor.stream_seq or 0) if info.ack_floor is not None else 0
    return max(floor, int(info.config.opt_start_seq or 1) - 1)


def bounds(state: Any) -> tuple[int, int]:
    """``(base, end)`` offsets of a stream state (an empty stream starts at its end)."""
    end = int(state.last_seq or 0)
    return (int(state.first_seq) - 1 if state.messages else end), end


def seq(msg: Msg) -> int:
    """A pulled message's stream sequence."""
    return int(msg.metadata.sequence.stream)


def consecutive(msgs: list[Msg]) -> list[Msg]:
    """The head of ``msgs`` up to the first one that does not follow its predecessor
    (the rest stay delivered and unacknowledged, for the next advance to redeliver)."""
    for i in range(1, len(msgs)):
        if seq(msgs[i]) != seq(msgs[i - 1]) + 1:
            return msgs[:i]
    return msgs


def starts_at_floor(info: ConsumerInfo, msgs: list[Msg]) -> bool:
    """Whether ``msgs`` (just pulled) leave no message delivered and unacknowledged
    behind them: the first follows the ack floor, or they are all the consumer has out."""
    if not msgs:
        return not info.num_ack_pending
    return seq(msgs[0]) <= cursor_of(info) + 1 or (info.num_ack_pending or 0) <= len(msgs)


async def redeliver(backend: NatsJetStreamStorage, stream: str, info: ConsumerInfo) -> None:
    """Have the consumer of ``info`` deliver again, in order, what it delivered past its
    ack floor: a ``-NAK`` to each such message's ack subject (the server takes one for a
    message it no longer has out as nothing)."""
    delivered = info.delivered
    if delivered is None or not delivered.consumer_seq:
        return
    last = int(delivered.stream_seq or 0)
    dseq = int(delivered.consumer_seq)
    prefix = f"$JS.ACK.{stream}.{info.name}.1"
    subjects = [f"{prefix}.{s}.{dseq}.0.0" for s in range(cursor_of(info) + 1, last + 1)]
    for error in await backend.replies.ack_subjects(subjects, b"-NAK"):
        if error is not None:
            raise error


async def pull_at_cursor(backend: NatsJetStreamStorage, stream: str, consumer: str,
                         count: int, cursor: int, unread: bool, doing: str,
                         ours: Callable[[ConsumerInfo], bool]) -> list[Msg]:
    """Up to ``count`` consecutive messages of ``consumer`` from its cursor on, not
    acknowledged.

    ``cursor`` is the cursor as this process last saw it and ``unread`` whether it saw
    elements past it: a pull that starts elsewhere, or finds nothing while there are
    unread elements, reads the consumer to tell; raises :class:`BrokerObjectLost` when
    that finds one that is not ``ours`` (made again outside this library under its
    name), :class:`BrokerUnavailable` when other advances kept taking the messages at
    the cursor."""
    for _ in range(ATTEMPTS):
        msgs = consecutive(await backend.pull(stream, consumer, count))
        if (msgs and seq(msgs[0]) == cursor + 1) or (not msgs and not unread):
            return msgs
        info: Any = None
        for pause in PAUSES:
            # the messages behind these may be another advance's, acknowledged soon
            await asyncio.sleep(pause * (1 + random.random()))
            try:
                info = await backend.js.consumer_info(stream, consumer)
            except jserr.NotFoundError:
                return []  # gone (deleted or disconnected meanwhile): nothing to take
            if not ours(info):
                raise BrokerObjectLost(f"nats at {backend.address}: {doing}: consumer "
                                       f"{consumer} was made again outside this library")
            if starts_at_floor(info, msgs):
                return msgs
        await redeliver(backend, stream, info)
        cursor, unread = cursor_of(info), True
    raise BrokerUnavailable(
        f"nats at {backend.address}: {doing}: other advances of this subscriber kept "
        f"taking the messages at its cursor ({ATTEMPTS} pulls); nothing was acknowledged: "
        "advance again")

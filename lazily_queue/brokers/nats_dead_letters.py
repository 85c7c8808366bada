"""The dead letters of a NATS work queue (:mod:`.nats_work`): the messages of its stream
``LQ_DL_<name>``, each with the headers ``Lq-Item``, ``Lq-Attempts`` and ``Lq-Reason``.

A message is moved there by a publish with a ``Nats-Msg-Id`` derived from its item (a
retried move is stored once), then ``+TERM`` on the work queue. A redrive publishes
them to the work queue again as new items and deletes them, :data:`REDRIVE_PAGE` read at
a time.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from nats.aio.msg import Msg

from ..core.work import DeadLetter
from .codec import decode, encode
from .mirrors import foreign_letter, whole

if TYPE_CHECKING:
    from .nats_backend import NatsJetStreamStorage

#: Dead letters a redrive reads at a time.
REDRIVE_PAGE = 256


def letter(seq: int, raw: Any) -> DeadLetter:
    """The dead letter stored as message ``seq`` (one another program wrote: its headers
    as far as they read)."""
    headers = raw.headers or {}
    return foreign_letter(whole(headers.get("Lq-Item"), 0), decode(raw.data or b""),
                          headers.get("Lq-Attempts"), headers.get("Lq-Reason"), seq)


async def move(backend: NatsJetStreamStorage, msg: Msg, stream: str, dead_subject: str,
               attempts: int, reason: str) -> None:
    """Dead-letter ``msg`` of the work queue ``stream`` after ``attempts`` deliveries."""
    item = msg.metadata.sequence.stream
    headers = {"Lq-Item": str(item), "Lq-Attempts": str(attempts), "Lq-Reason": reason,
               "Nats-Msg-Id": f"{stream}-{item}"}
    await backend.publish(dead_subject, msg.data, headers)
    await backend.ack(msg, b"+TERM")


async def redrive(backend: NatsJetStreamStorage, dead_stream: str, subject: str,
                  item_ids: Collection[int] | None) -> int:
    """Publish the dead letters of ``dead_stream`` (all, or those items) to ``subject``
    again and delete them; those dead-lettered after the redrive began stay. Returns how
    many moved."""
    wanted = None if item_ids is None else set(item_ids)
    b = backend
    moved = 0
    async with b.errors(f"redriving {dead_stream}"):
        info = await b.js.stream_info(dead_stream)
        start, last = info.state.first_seq, info.state.last_seq
        while info.state.messages and start <= last:
            page = await b.messages(dead_stream, start, REDRIVE_PAGE)
            for seq, raw in page:
                if seq > last:  # dead-lettered after the redrive began
                    break
                item = whole((raw.headers or {}).get("Lq-Item"), 0)
                item = seq if item is None else item
                if wanted is not None and item not in wanted:
                    continue
                await b.publish(subject, raw.data or encode(None),
                                {"Nats-Msg-Id": f"redrive-{dead_stream}-{seq}"})
                await b.js.delete_msg(dead_stream, seq)
                moved += 1
            if not page:
                break
            start = page[-1][0] + 1
    return moved

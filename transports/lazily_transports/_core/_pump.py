"""A peer connection's pump: the task that carries its received frames to the events."""

from __future__ import annotations

import asyncio
import logging

import anyio

from ..abc import LinkAttribute
from ..events import EventStream, Frame, PeerCounters
from ..streams import LinkStream

__all__ = ["pump_frames", "pump_outcome"]

logger = logging.getLogger("lazily_transports.mesh")


async def pump_frames(stream: LinkStream, events: EventStream, counters: PeerCounters,
               peer_id: int) -> str:
    """Put every frame ``stream`` receives into ``events`` as a ``Frame`` of ``peer_id``
    (waiting while they are full) until the connection ends; returns why it ended."""
    channel = stream.channel
    epoch = stream.extra(LinkAttribute.epoch)
    try:
        while True:
            try:
                data = channel.receive_nowait()
            except anyio.WouldBlock:
                await channel.wait_receive_ready()
                continue
            counters.frames_received += 1
            event = Frame(peer_id, epoch, data)
            if not events.put_frame_nowait(event):
                await events.wait_space()
                if not events.put_frame_nowait(event):
                    return "mesh closed"
    except anyio.EndOfStream:
        return "closed by peer"
    except anyio.ClosedResourceError:
        return "closed locally"
    except anyio.BrokenResourceError:
        return channel.close_reason or "link failed"


def pump_outcome(task: asyncio.Task[str]) -> str:
    """Why a connection's pump ended (cancelling it if it still runs)."""
    if not task.done():
        task.cancel()
        return "link closed"
    if task.cancelled():
        return "link closed"
    error = task.exception()
    if error is not None:
        logger.error("receiving from a peer failed", exc_info=error)
        return f"internal error: {error!r}"
    return task.result()

"""One WebRTC negotiation of a signaling session that has not produced an open channel."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from aiortc import RTCPeerConnection

from ..config import LinkConfig
from .channel import WebRTCChannel

__all__ = ["Accept", "Pending"]

Accept = Callable[[WebRTCChannel], None]


@dataclass(eq=False)
class Pending:
    """One negotiation that has not produced an open channel yet."""

    peer: int
    config: LinkConfig | None
    on_open: Accept | None = None
    future: asyncio.Future[WebRTCChannel] | None = None
    pc: RTCPeerConnection | None = None
    channel: WebRTCChannel | None = None
    abandoned: bool = False
    done: bool = False
    timer: asyncio.TimerHandle | None = None

    def finish(self) -> None:
        self.done = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def resolve(self, channel: WebRTCChannel) -> None:
        self.finish()
        if self.future is not None and not self.future.done():
            self.future.set_result(channel)
        elif self.on_open is not None:
            self.on_open(channel)

    def fail(self, exc: Exception) -> None:
        self.finish()
        if self.future is not None and not self.future.done():
            self.future.set_exception(exc)

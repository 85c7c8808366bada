"""Decoding a client's request frames off the event loop when they are large.

A frame's values are built while it is decoded, some of them by Python hooks: a
megabyte of decimals (4 bytes each) takes a third of a second, more than a leader's
followers wait for its heartbeats. A frame of at least :data:`THREAD_BYTES` is decoded
on one thread of the member's client server, so such hooks hold the event loop only a
switch interval at a time; smaller ones (most requests) are decoded at once. Values
cbor2 builds itself (datetimes, dates, UUIDs, sets) run no Python code, so a frame holds
at most one tagged value (ints over 64 bits aside) per :data:`TAGGED_BYTES` bytes of the
limit, each counted by a lookup that lets the loop take the interpreter back: a megabyte
of epoch datetimes, half a million, held the loop for a fifth of a second. One thread
decodes one frame at a time, so the values being built take no more memory than when
the loop decoded them, and each link's frames are still handled in order (its task
waits for its frame).
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..raft.batch import command_limit
from . import protocol as P

#: Frames at least this large are decoded on the decoding thread.
THREAD_BYTES = 64 * 1024
#: A frame of a ``max_bytes`` limit holds at most ``max_bytes // TAGGED_BYTES`` tagged
#: values: at least every one an op a member admits may hold (one per
#: :data:`~..raft.values.CONTAINER_BYTES` bytes of the message limit, a give-back a take's
#: besides) and those of a client's batch of frames, two bytes each at the least.
TAGGED_BYTES = 8


def request_limit(max_message_bytes: int) -> int:
    """The largest frame of requests a member reads (a batch of them, or one op of the
    largest command it accepts) when messages are at most ``max_message_bytes``."""
    return max(P.MIN_REQUEST_BYTES, command_limit(max_message_bytes) + P.REQUEST_OVERHEAD)


class FrameDecoder:
    """Decodes request frames of at most ``max_bytes`` and ``max_tags`` tagged values
    (:func:`.protocol.decode`)."""

    def __init__(self, max_bytes: int, name: str) -> None:
        self.max_bytes = max_bytes
        self.max_tags = max_bytes // TAGGED_BYTES
        self._name = name
        self._thread: ThreadPoolExecutor | None = None

    async def decode(self, data: bytes) -> list[Any] | P.RequestRefused:
        """The frame, or why it is refused."""
        decode = functools.partial(P.decode, data, max_bytes=self.max_bytes,
                                   max_tags=self.max_tags)
        try:
            if len(data) < THREAD_BYTES:
                return decode()
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix=self._name)
            return await asyncio.get_running_loop().run_in_executor(self._thread, decode)
        except P.RequestRefused as exc:
            return exc

    def close(self) -> None:
        """Stop the thread (a frame it decodes is dropped); a later frame starts another."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=False, cancel_futures=True)

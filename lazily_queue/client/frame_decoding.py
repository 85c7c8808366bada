"""Decoding a client's request frames off the event loop when they are large.

A frame's values are built while it is decoded, some of them by Python hooks: a
megabyte of decimals (4 bytes each) takes a third of a second, more than a leader's
followers wait for its heartbeats. A frame of at least :data:`THREAD_BYTES` is decoded
on one thread of the member's client server, so such hooks hold the event loop only a
switch interval at a time; smaller ones (most requests) are decoded at once. Values
cbor2 builds itself (datetimes, dates, UUIDs, sets) run no Python code, so a frame holds
at most one tagged value (an int over 64 bits once per 8 bytes of it) per
:data:`TAGGED_BYTES` bytes of the limit, each counted by a lookup that lets the loop take
the interpreter back: a megabyte of epoch datetimes, half a million, held the loop for a
fifth of a second. Nor do empty
arrays and maps: a frame on the thread holds at most one array or map per
:data:`NESTED_BYTES` bytes of the limit, counted before it is decoded
(:func:`containers_over`, Python code the loop can interrupt): a megabyte of nested
empty arrays held the loop for 0.14 s of CPU. One thread
decodes one frame at a time, so the values being built take no more memory than when
the loop decoded them, and each link's frames are still handled in order (its task
waits for its frame). The frames waiting for the thread go by client in turn, so one
client's many links keep another's frame waiting for at most one frame of each client
with frames waiting (and the one being decoded), not for all of theirs. A frame whose
link ends while it waits is dropped undecoded at once, its bytes let go then rather than
at its turn, and so are those its link queued after it (:func:`dropped`): its task, and
its place among the links, are freed then.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
from lazily_transports import FrameStream

from ..raft.batch import command_limit
from . import protocol as P

#: Frames at least this large are decoded on the decoding thread.
THREAD_BYTES = 64 * 1024
#: A frame of a ``max_bytes`` limit holds at most ``max_bytes // TAGGED_BYTES`` tagged
#: values: at least every one an op a member admits may hold (one per
#: :data:`~..raft.values.CONTAINER_BYTES` bytes of the message limit, a give-back a take's
#: besides) and those of a client's batch of frames, two bytes each at the least.
TAGGED_BYTES = 8
#: A frame on the decoding thread holds at most ``max_bytes // NESTED_BYTES`` arrays and
#: maps: more than an op a member admits holds (one per
#: :data:`~..raft.values.CONTAINER_BYTES` bytes of the message limit, a give-back a take's
#: besides) and than a client's batch of several frames, a byte each at the least.
NESTED_BYTES = 4
#: The first bytes of every array's and map's head (CBOR major types 4 and 5).
_HEADS = bytes(range(0x80, 0xC0))


def containers_over(data: bytes, most: int) -> bool:
    """Whether the CBOR ``data`` holds more than ``most`` arrays and maps. Data with no
    more bytes that could start one is not read further; other data's heads are walked
    (strings skipped) until ``most`` is passed. Indefinite lengths end the walk (the
    decoder refuses them)."""
    if len(data) - len(data.translate(None, _HEADS)) <= most:
        return False
    count, i, end = 0, 0, len(data)
    while i < end:
        initial = data[i]
        info = initial & 31
        i += 1
        if info < 24:
            arg = info
        elif info < 28:
            width = 1 << (info - 24)
            arg = int.from_bytes(data[i:i + width])
            i += width
        else:
            return False
        major = initial >> 5
        if major == 2 or major == 3:  # a string: its bytes are no heads
            i += arg
        elif major == 4 or major == 5:
            count += 1
            if count > most:
                return True
    return False


#: A frame waiting for the thread: its decoding and the future its link awaits.
_Waiting = tuple[Callable[[], list[Any]], "asyncio.Future[list[Any]]"]


def request_limit(max_message_bytes: int) -> int:
    """The largest frame of requests a member reads (a batch of them, or one op of the
    largest command it accepts) when messages are at most ``max_message_bytes``."""
    return max(P.MIN_REQUEST_BYTES, command_limit(max_message_bytes) + P.REQUEST_OVERHEAD)


class FrameDecoder:
    """Decodes request frames of at most ``max_bytes``, ``max_tags`` tagged values
    (:func:`.protocol.decode`) and, on the thread, ``max_containers`` arrays and maps;
    the large ones on its thread by client in turn."""

    def __init__(self, max_bytes: int, name: str) -> None:
        self.max_bytes = max_bytes
        self.max_tags = max_bytes // TAGGED_BYTES
        self.max_containers = max_bytes // NESTED_BYTES
        self._name = name
        self._thread: ThreadPoolExecutor | None = None
        #: Frames waiting for the thread, by client, the next one's first.
        self._waiting: OrderedDict[str, deque[_Waiting]] = OrderedDict()
        #: The decoding on the thread now.
        self._running: asyncio.Future[list[Any]] | None = None

    async def decode(self, data: bytes, client: str = "",
                     ended: Callable[[], Awaitable[None]] | None = None,
                     ) -> list[Any] | P.RequestRefused | None:
        """The frame ``client`` sent, or why it is refused; ``None`` when ``ended`` (its
        link's end) returned first: the frame is dropped, not decoded."""
        decode = functools.partial(P.decode, data, max_bytes=self.max_bytes,
                                   max_tags=self.max_tags)
        try:
            if len(data) < THREAD_BYTES:
                return decode()
            frame: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
            entry = (functools.partial(self._decode_large, data, decode), frame)
            self._waiting.setdefault(client, deque()).append(entry)
            if self._running is None:
                self._next()
            if ended is None:
                return await frame
            ending = asyncio.ensure_future(ended())
            try:
                done, _ = await asyncio.wait((frame, ending),
                                             return_when=asyncio.FIRST_COMPLETED)
            except BaseException:
                self._give_up(client, entry)
                raise
            finally:
                ending.cancel()
            if frame in done:
                return await frame
            self._give_up(client, entry)
            return None
        except P.RequestRefused as exc:
            return exc

    def _give_up(self, client: str, entry: _Waiting) -> None:
        """Let go of ``client``'s frame ``entry``: not decoded if it still waits, and not
        held until its turn (its bytes freed now), its result dropped if it is decoding."""
        entry[1].cancel()
        frames = self._waiting.get(client)
        if frames is None:
            return
        try:
            frames.remove(entry)
        except ValueError:  # taken by :meth:`_next` already
            return
        if not frames:
            del self._waiting[client]

    def _next(self) -> None:
        """Start decoding the frame of the client next in turn (a frame whose link went
        away is passed by)."""
        self._running = None
        while self._waiting:
            client, frames = next(iter(self._waiting.items()))
            decode, frame = frames.popleft()
            if frames:
                self._waiting.move_to_end(client)
            else:
                del self._waiting[client]
            if frame.done():
                continue
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix=self._name)
            running = self._running = asyncio.get_running_loop().run_in_executor(
                self._thread, decode)
            running.add_done_callback(functools.partial(self._decoded, frame))
            return

    def _decoded(self, frame: asyncio.Future[list[Any]],
                 running: asyncio.Future[list[Any]]) -> None:
        """``running`` ended: its outcome to ``frame``, then the next frame."""
        error = None if running.cancelled() else running.exception()
        if not frame.done():
            if running.cancelled():
                frame.cancel()
            elif error is not None:
                frame.set_exception(error)
            else:
                frame.set_result(running.result())
        if running is self._running:  # else stopped meanwhile (:meth:`close`)
            self._next()

    def _decode_large(self, data: bytes, decode: Callable[[], list[Any]]) -> list[Any]:
        """On the thread: refuse a frame over :attr:`max_containers`, else decode it."""
        if containers_over(data, self.max_containers):
            raise P.RequestRefused(
                f"unreadable frame: more than {self.max_containers:,} arrays and maps (one "
                f"per {NESTED_BYTES} bytes of the {self.max_bytes}-byte request limit)")
        return decode()

    def close(self) -> None:
        """Stop the thread (a frame it decodes, and those waiting, are dropped); a later
        frame starts another."""
        thread, self._thread, self._running = self._thread, None, None
        waiting, self._waiting = self._waiting, OrderedDict()
        for frames in waiting.values():
            for _, frame in frames:
                frame.cancel()
        if thread is not None:
            thread.shutdown(wait=False, cancel_futures=True)


def dropped(stream: FrameStream) -> BaseException:
    """Drop, undecoded, the frames an ended ``stream`` still queues; returns what reading
    it raises then (its end)."""
    while True:
        try:
            stream.receive_nowait()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            return exc

"""Outbox: frames for one link, sent in order without making the sender wait.

A frame goes out at once when nothing is queued and the link's buffer has room;
otherwise it is queued and a writer task sends it when the link drains. More than
``limit`` queued bytes (the other end does not read) closes the outbox and calls
``on_overflow``. A frame larger than ``limit`` itself (:meth:`Outbox.send_oversized`, a
large object's state in pieces, or any state the sender paces) is counted apart: alone
it is always queued, so a reader that keeps up is never cut off for it; another one while
it is queued overflows (a sender pacing its states waits for :meth:`Outbox.oversized_sent`
first).

Outboxes may share an :class:`AnswerBudget`: the bytes they queue in all are held
within its limit by closing (overflowing) those whose links took bytes least recently,
so links that do not read cannot each queue up to their own limit. It also counts the
answers its links send at once, ahead of the end of the loop iteration (at most
:data:`AT_ONCE` an iteration).

A tracking outbox (a client's) numbers its frames and tells whether one is still held in
this process (:meth:`Outbox.holds`): then the peer never got all of it. Closing it
aborts the link, so what it held then is never sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

import anyio
from lazily_transports import LinkStream

#: Answers the links sharing a budget send at once in one loop iteration: the rest of
#: the iteration's answers leave at its end, after the Raft messages of the step that
#: applied them (many light links answered by one step would otherwise hold those back).
AT_ONCE = 4


class AnswerBudget:
    """The bytes queued by the outboxes sharing it, held within ``limit``: once they are
    over it, the outbox whose link took bytes least recently overflows (module
    docstring), and the next, until they are within it again."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        #: Outboxes overflowed to keep within the limit.
        self.closed = 0
        self.outboxes: set[Outbox] = set()
        self._sent_at_once = 0  # in this loop iteration

    def at_once(self) -> bool:
        """Whether another answer may leave at once in this loop iteration (at most
        :data:`AT_ONCE`)."""
        if not self._sent_at_once:
            asyncio.get_running_loop().call_soon(self._next_iteration)
        self._sent_at_once += 1
        return self._sent_at_once <= AT_ONCE

    def _next_iteration(self) -> None:
        self._sent_at_once = 0

    def grew(self) -> None:
        """Bytes were queued: overflow the stalest outboxes while over the limit."""
        while self.held > self.limit:
            stalest = min((box for box in self.outboxes if box.queued),
                          key=lambda box: box.progress, default=None)
            if stalest is None:
                return
            self.closed += 1
            stalest._overflow()


class Outbox:
    """Ordered, non-blocking sending on one link (module docstring)."""

    def __init__(self, stream: LinkStream, *, limit: int,
                 on_overflow: Callable[[int], None] | None = None, track: bool = False,
                 budget: AnswerBudget | None = None) -> None:
        self.stream = stream
        self._budget = budget
        if budget is not None:
            budget.outboxes.add(self)
        self._track = track
        #: Frames taken so far (the next one's number), and those handed to the link.
        self.frames = 0
        self._handed = 0
        #: Tracking: the link's ``accepted_bytes`` at the end of each frame handed to it
        #: from number ``_ends_first`` on, while it may still hold part of it.
        self._ends: deque[int] = deque()
        self._ends_first = 0
        self.limit = limit
        self._on_overflow = on_overflow
        self._queue: deque[tuple[bytes, bool]] = deque()
        #: Bytes queued, and those of oversized frames among them.
        self.queued = 0
        self.oversized = 0
        self.closed = False
        #: Loop time the link last took bytes (or the outbox was made).
        #: The loop's clock.
        self._time = asyncio.get_running_loop().time
        self.progress = self._time()
        self._ready = asyncio.Event()
        self._oversized_sent = asyncio.Event()
        self._oversized_sent.set()
        self._writer = asyncio.ensure_future(self._write())

    def send(self, data: bytes) -> None:
        """Send or queue ``data``; nothing happens once closed."""
        if (self._put(data, False) and self.queued - self.oversized > self.limit
                and not self.closed):
            self._overflow()

    def send_oversized(self, pieces: list[bytes]) -> None:
        """Send or queue the pieces of one frame larger than ``limit`` (module docstring)."""
        if self.closed:
            return
        if self.oversized:
            self._overflow(sum(len(piece) for piece in pieces))
            return
        for piece in pieces:
            self._put(piece, True)

    def _put(self, data: bytes, oversized: bool) -> bool:
        """Send ``data`` or queue it; True when it was queued."""
        if self.closed:
            return False
        self.frames += 1
        if not self._queue:
            try:
                self.stream.send_nowait(data)
            except anyio.WouldBlock:
                pass
            except Exception:  # the link is gone: whoever reads it sees that
                self.close()
                return False
            else:
                self.progress = self._time()
                self._handed_off()
                return False
        self._queue.append((data, oversized))
        self.queued += len(data)
        if oversized:
            self.oversized += len(data)
            self._oversized_sent.clear()
        self._ready.set()
        budget = self._budget
        if budget is not None:
            budget.held += len(data)
            if budget.held > budget.limit:
                budget.grew()
        return True

    def _overflow(self, more: int = 0) -> None:
        queued = self.queued + more
        self.close()
        if self._on_overflow is not None:
            self._on_overflow(queued)

    async def oversized_sent(self) -> None:
        """Return once no oversized frame is queued (at once when none is), or the
        outbox closed."""
        await self._oversized_sent.wait()

    def flush(self) -> None:
        """Hand what was sent to the link's connection now rather than later in this
        loop iteration (before the caller wakes other processes)."""
        if not self.closed:
            try:
                self.stream.flush()
            except Exception:  # the link is gone: whoever reads it sees that
                self.close()

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                while self._queue:
                    data, oversized = self._queue[0]
                    await self.stream.send(data)
                    self.progress = loop.time()
                    self._handed_off()
                    self._queue.popleft()
                    self.queued -= len(data)
                    if self._budget is not None:
                        self._budget.held -= len(data)
                    if oversized:
                        self.oversized -= len(data)
                        if not self.oversized:
                            self._oversized_sent.set()
        except Exception:
            self.close()

    def _handed_off(self) -> None:
        """The oldest frame not yet handed to the link was (tracking: note where it ends
        and forget the frames the link no longer holds any of)."""
        self._handed += 1
        if not self._track:
            return
        channel = self.stream.channel
        ends = self._ends
        ends.append(channel.accepted_bytes)
        sent = channel.sent_bytes
        while ends and (sent is None or ends[0] <= sent):
            ends.popleft()
            self._ends_first += 1

    def holds(self, frame: int) -> bool:
        """Whether some bytes of frame number ``frame`` (:attr:`frames` when it was taken;
        tracking) are still in this process, or were dropped by :meth:`close`: then the
        peer did not get all of it (nor will, once closed)."""
        if frame >= self._handed:
            return True
        if frame < self._ends_first:
            return False
        sent = self.stream.channel.sent_bytes
        return sent is not None and self._ends[frame - self._ends_first] > sent

    def close(self) -> None:
        """Drop what is queued and close the link (tracking: at once, dropping what the
        link holds too)."""
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        if self._budget is not None:
            self._budget.held -= self.queued
            self._budget.outboxes.discard(self)
        self.queued = self.oversized = 0
        self._oversized_sent.set()
        self._writer.cancel()
        if self._track:
            try:
                self.stream.abort()
            except Exception:  # the link is gone already
                pass
            return
        task = asyncio.ensure_future(self.stream.aclose())
        task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def wait_closed(self) -> None:
        with contextlib.suppress(BaseException):
            await self._writer

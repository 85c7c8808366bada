"""Link: one client connection to one member, its requests in flight and its frames.

The link sends ``HELLO`` first, then whatever the client asks; each request is given an
id and a callback that receives the member's answer (``OK`` or ``ERROR`` and its
payload). Frames with id 0 (mirror updates, pieces of large frames) go to
``on_notice``, but for a refusal of the link by a member's cap (:mod:`.link_caps`),
noted in :attr:`refusal`. A link that fails (closed, unreadable, no frame heard within
the ping timeout) ends its :meth:`run`; the callbacks of its unanswered requests, and of any
request made on it after, are called with ``None``: the request's outcome is unknown,
unless :meth:`Link.unread` says the member never read it (its frame never left this
process: a closed link drops what it still holds; or the member refused the link).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

import anyio
from lazily_transports import LinkStream

from . import protocol as P
from .frame_budget import FRAME_BUDGET
from .link_caps import TOO_MANY_LINKS
from .outbox import Outbox
from .ping import cannot_commit

log = logging.getLogger(__name__)

#: An answer: ``(status, payload)``, or ``None`` when the link ended first.
Answer = tuple[int, Any] | None
#: Frames from the member a client buffers before it is considered stuck.
OUTBOX_LIMIT = 32 * 1024 * 1024
#: Largest frame a client reads from a member (members cut larger ones in parts).
MAX_FRAME_BYTES = 1024 * 1024
#: Requests are sent as soon as this many bytes of them wait for the loop iteration.
BATCH_BYTES = 256 * 1024


_rids = itertools.count(1)
_OP = P.uint(P.OP)


class Link:
    """One client link to a member (module docstring)."""

    def __init__(self, stream: LinkStream, address: str, *,
                 on_notice: Callable[[int, Any], None]) -> None:
        self.stream = stream
        self.address = address
        self.member: str | None = None
        #: The leader the member knew of when the link was made.
        self.leader: str | None = None
        #: What the member serves beyond the protocol version (its hello's ``features``).
        self.features: frozenset[str] = frozenset()
        #: The largest request frame the member reads (its hello's ``max_request_bytes``;
        #: ``None``: not said). A larger one would make it drop the link.
        self.max_request: int | None = None
        #: The member answered the hello: :attr:`features` is known.
        self.greeted = False
        #: Set once the member answered the hello or the link ended.
        self.settled = asyncio.Event()
        #: Why the member refused this link over one of its caps (:mod:`.link_caps`).
        self.refusal: str | None = None
        #: The wire code of :attr:`refusal` (``"too_many_links"`` or ``"frame_budget"``).
        self.refusal_code: str | None = None
        #: The number of the first frame the member never read, when its refusal said
        #: (over the frame budget: it read the frames before it only).
        self.unread_from: int | None = None
        #: The member answered an op other than with an error that sends the client to
        #: another member (or a watch): it serves this client.
        self.served = False
        #: The member answered an op that it cannot commit it (no quorum, a full disk).
        self.cannot_commit = False
        #: Why the client doubts this member can commit (the last member left said it
        #: could not), until it answers the ping :meth:`doubt_commits` sent.
        self.doubt: str | None = None
        self._on_notice = on_notice
        self.outbox = Outbox(stream, limit=OUTBOX_LIMIT, track=True)
        self._waiting: dict[int, Callable[[Answer], None]] = {}
        #: :meth:`run` ended: a request made now is answered ``None`` at once.
        self.ended = False
        self._parts: list[bytes] = []
        self._parts_size = 0
        self.heard = 0.0
        #: The loop time of the first ping sent since a frame was last heard (``None``:
        #: none unanswered).
        self.pinged: float | None = None
        self.failure: str | None = None
        self._reader: asyncio.Task[None] | None = None
        self._batch: list[bytes] = []
        self._batch_bytes = 0
        #: The number of the frame the last request made goes out in (see :meth:`holds`).
        self.last_frame = 0
        #: The connection's ``sent_bytes`` when last looked at, and the loop time it was
        #: last seen to have grown (:meth:`stalled_for`).
        self._sent_seen: int | None = None
        self._moved = asyncio.get_running_loop().time()

    @property
    def open(self) -> bool:
        return not self.outbox.closed

    def request(self, frame: list[Any], on_answer: Callable[[Answer], None]) -> int:
        """Send ``[id, *frame]``; ``on_answer`` gets the answer (or ``None``)."""
        rid = self._wait(on_answer)
        if not self.ended:
            self._queue(P.encode([rid, *frame]))
        return rid

    def _wait(self, on_answer: Callable[[Answer], None]) -> int:
        """A new request id whose answer goes to ``on_answer`` (``None`` soon when the
        link has ended: no answer can come)."""
        rid = next(_rids)
        if self.ended:
            asyncio.get_running_loop().call_soon(on_answer, None)
        else:
            self._waiting[rid] = on_answer
        return rid

    def _queue(self, data: bytes) -> None:
        """Requests made in one loop iteration leave together, in order (the ops of a
        batch call are one proposal, and readers see them change once)."""
        if self._batch and self._batch_bytes + len(data) > BATCH_BYTES:
            self._flush()  # a member reads a batch up to about 1 MiB, a lone op up to its limit
        if not self._batch:
            asyncio.get_running_loop().call_soon(self._flush)
        self.last_frame = self.outbox.frames  # the batch's number once it leaves
        self._batch.append(data)
        self._batch_bytes += len(data)

    def _flush(self) -> None:
        if self._batch:
            frames, self._batch, self._batch_bytes = self._batch, [], 0
            self.outbox.send(P.batch(frames))
            self.outbox.flush()

    def send_op(self, seq: int, floor: int, code: int, args: bytes, timeout_ms: int,
                on_answer: Callable[[Answer], None]) -> int:
        """Send ``[id, OP, seq, floor, code, args, timeout_ms]`` with ``args`` already
        encoded (an op keeps its encoded arguments across retries)."""
        rid = self._wait(on_answer)
        if not self.ended:
            uint = P.uint
            self._queue(b"".join((b"\x87", uint(rid), _OP, uint(seq), uint(floor), uint(code),
                                  args, uint(timeout_ms))))
        return rid

    def holds(self, frame: int) -> bool:
        """Whether frame number ``frame`` (:attr:`last_frame` when its requests were
        made) is still held, in part, by this process: the member did not read those
        requests (and never will, once the link is closed)."""
        return self.outbox.holds(frame)

    def unread(self, frame: int) -> bool:
        """Whether the member certainly did not read the requests of frame number
        ``frame``: it is still held here (:meth:`holds`), the member refused the whole
        link over a cap (it reads and drops what such a link sends), or its refusal over
        the frame budget said it read only the frames before it (:attr:`unread_from`)."""
        return ((self.refusal_code == TOO_MANY_LINKS and not self.greeted)
                or (self.unread_from is not None and frame >= self.unread_from)
                or self.holds(frame))

    def stalled_for(self, now: float) -> float:
        """Seconds since bytes of this client were last seen leaving for the member (as
        of the last ping interval or call); since the link last took a frame when its
        connection cannot tell."""
        sent = self.stream.channel.sent_bytes
        if sent is None:
            return now - self.outbox.progress
        if sent != self._sent_seen:
            self._sent_seen, self._moved = sent, now
        return now - self._moved

    def forget(self, rid: int) -> None:
        self._waiting.pop(rid, None)

    def ask(self, frame: list[Any]) -> asyncio.Future[Answer]:
        """:meth:`request`, answered through a future."""
        fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()

        def answered(answer: Answer) -> None:
            if not fut.done():
                fut.set_result(answer)

        self.request(frame, answered)
        return fut

    def close(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        self.outbox.close()
        if self._reader is not None:
            self._reader.cancel()

    async def run(self, *, ping_interval: float, ping_timeout: float) -> None:
        """Read frames until the link fails; ping the member when it is quiet."""
        loop = asyncio.get_running_loop()
        self.heard = loop.time()
        self._reader = asyncio.ensure_future(self._read())
        channel = self.stream.channel
        channel.set_receive_hook(self._take_queued)  # else the reader takes every frame
        try:
            while not self._reader.done():
                await asyncio.wait({self._reader}, timeout=ping_interval)
                self.stalled_for(loop.time())
                quiet = loop.time() - self.heard
                if quiet > ping_timeout:
                    self.close(f"no frame from the member for {quiet:.1f} s")
                elif quiet >= ping_interval and self.open:
                    if self.pinged is None:
                        self.pinged = loop.time()
                    self.request([P.PING], self._ping_answered)
        finally:
            channel.set_receive_hook(None)
            self.close(self.failure or "link closed")
            self.ended = True
            self.settled.set()
            waiting, self._waiting = self._waiting, {}
            for callback in waiting.values():
                callback(None)

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                data = await self.stream.receive()
                self._heard(loop.time())
                self._frame(data)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.failure = self.failure or "the member closed the link"
        except Exception as exc:  # a frame the client cannot use: this member is unusable
            self._unusable(exc)

    def doubt_commits(self, why: str) -> None:
        """Ask the member at once whether it can commit (a ping, answered after the
        hello): the link stays doubted (:attr:`doubt`, ``why``) until it says it can."""
        self.doubt = why
        self.request([P.PING], self._ping_answered)

    def _ping_answered(self, answer: Answer) -> None:
        """A member answering a ping that it cannot commit is left (:mod:`.ping`); the
        link counts as unserved, so the client pauses once every member said so."""
        reason = cannot_commit(answer)
        if reason is not None and self.open:
            self.cannot_commit, self.served = True, False
            self.close(reason)
        elif answer is not None and answer[0] == P.OK:  # an error says nothing of commits
            self.doubt = None

    def _heard(self, now: float) -> None:
        self.heard, self.pinged = now, None

    def _take_queued(self) -> None:
        """Frames the link just queued are dispatched now, in the callback that read them;
        the reader still meets the link's end and its errors."""
        channel = self.stream.channel
        while self.open and (data := channel.receive_queued()) is not None:
            self._heard(asyncio.get_running_loop().time())
            try:
                self._frame(data)
            except Exception as exc:  # a frame the client cannot use: as the reader would
                self._unusable(exc)
                self.close(self.failure or "unusable frame")  # which ends the reader
                return

    def _unusable(self, exc: Exception) -> None:
        log.warning("dropping the link to %s: %s", self.address, exc, exc_info=True)
        self.failure = self.failure or f"unusable frame from the member: {exc}"

    def _frame(self, data: bytes) -> None:
        frame = P.decode(data, max_bytes=MAX_FRAME_BYTES)
        if frame[0] == 0 and frame[1] == P.PART:
            self._part(frame)
        else:
            self._dispatch(frame)

    def _dispatch(self, frame: list[Any]) -> None:
        rid, kind = frame[0], frame[1]
        payload = frame[2] if len(frame) > 2 else None
        if rid == 0:
            if kind == P.BATCH and isinstance(payload, list):
                for item in payload:
                    if not isinstance(item, list) or len(item) < 2:
                        raise P.RequestRefused("a batch holds frames [id, kind, ...]")
                    self._dispatch(item)
            elif (kind == P.ERROR and isinstance(payload, list) and len(payload) >= 2
                  and payload[0] in (TOO_MANY_LINKS, FRAME_BUDGET)):
                self.refusal = str(payload[1])
                self.refusal_code = str(payload[0])
                read = payload[2] if len(payload) > 2 else None
                if payload[0] == FRAME_BUDGET and type(read) is int and read >= 0:
                    self.unread_from = read
                self.close(f"refused: {self.refusal}")
            else:
                self._on_notice(kind, payload)
            return
        callback = self._waiting.pop(rid, None)
        if callback is not None:
            callback((kind, payload))

    def _part(self, frame: list[Any]) -> None:
        if len(frame) != 4 or not isinstance(frame[2], bytes):
            raise P.RequestRefused("a part is [0, PART, bytes, last]")
        self._parts.append(frame[2])
        self._parts_size += len(frame[2])
        if self._parts_size > P.MAX_ASSEMBLED_BYTES:
            raise P.RequestRefused(f"a frame in parts exceeds {P.MAX_ASSEMBLED_BYTES} bytes")
        if frame[3] is True:
            data = b"".join(self._parts)
            self._parts, self._parts_size = [], 0
            self._dispatch(P.decode(data, max_bytes=P.MAX_ASSEMBLED_BYTES))

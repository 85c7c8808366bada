"""The local mirror of a broker object: how the synchronous readers stay current.

A broker storage answers the reactive readers (``len``, ``pending_len``, a subscriber's
unread suffix, ...) from a mirror of the broker's state held in the process. The mirror
is replaced by a *refresh* (one or a few round trips reading the broker's state), and
the storage reports to its cell exactly what changed between the two mirrors.

A :class:`~.refresher.Refresher` runs the refreshes, one at a time and coalesced:

- after every operation this process makes (the operation returns first; the refresh
  follows without delaying it);
- when the broker notifies a change made elsewhere (NATS: the stream's subject and
  JetStream advisories; Redis: the library's change channel and, when the server has
  ``notify-keyspace-events`` enabled, keyspace events);
- every ``poll_interval`` seconds otherwise (bounded polling: changes made by programs
  that send no notification, or notifications lost while disconnected).

Refreshes are at least :data:`~.refresher.MIN_INTERVAL` apart, so under load one refresh covers
many operations. The views (``pending()``, ``elements()``, ...) are read by a refresh at
most every ``poll_interval`` seconds, and by the one :meth:`MirroredObject.sync` waits
for; the counts the readers use, by every refresh.

``await storage.sync()`` returns once a refresh that started after the call has
finished, so the readers then reflect every operation that had returned before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..errors import InvalidConfiguration, shown
from ..node_settings import check_seconds
from .refresher import Refresher

#: Default seconds between refreshes when nothing was notified.
DEFAULT_POLL_INTERVAL = 1.0
#: Default number of items a mirror lists in its views (counts are always exact).
DEFAULT_VIEW_LIMIT = 10
#: Most messages one pop, claim or pull asks a broker for: a larger ``n`` asks for this
#: many (neither broker reads a count past its integers).
MAX_BATCH = 2**31 - 1


def check_options(options: Mapping[str, Any]) -> None:
    """Raise :class:`~lazily_queue.errors.InvalidConfiguration` for a wrong
    ``poll_interval`` or ``timeout`` (seconds) or ``view_limit`` (items) in a broker
    provider's ``options``."""
    for name in ("poll_interval", "timeout"):
        if name in options:
            check_seconds(options[name], name)
    limit = options.get("view_limit", DEFAULT_VIEW_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_BATCH:
        raise InvalidConfiguration(
            f"view_limit must be an int from 0 to {MAX_BATCH}, not {shown(limit)}")


class Declared:
    """A broker object's declaration (streams, groups, settings), made once on first use
    and retried after a failure."""

    def __init__(self, declare: Callable[[], Awaitable[Any]]) -> None:
        self._declare = declare
        self._future: asyncio.Future[Any] | None = None
        self._again = False

    async def ensure(self) -> None:
        """Return once a declaration that started after the last :meth:`forget` has
        succeeded (one at a time: two creating one stream at once can break it on the
        broker); raises what it raised."""
        while True:
            future = self._future
            if future is None or (future.done() and (
                    self._again or future.exception() is not None)):
                self._again = False
                future = self._future = asyncio.ensure_future(self._declare())
                # Its failure reaches whoever awaits it; none may, once the client closed.
                future.add_done_callback(_retrieved)
            await asyncio.shield(future)
            if not self._again:
                return

    def forget(self) -> None:
        """Declare again on next use (the broker may have lost it: restarted, purged),
        after the declaration under way if there is one."""
        if self._future is not None and not self._future.done():
            self._again = True
        else:
            self._future = None


def queue_transitions(
    old: tuple[int, object, bool], new: tuple[int, object, bool], capacity: int | None
) -> list[tuple[int, int]]:
    """The ``(op, pre_len)`` reports that take a queue cell's readers from the mirror
    ``old`` to ``new`` (each ``(len, head identity, closed)``): a head whose identity
    changed was popped (or, when the queue grew, put back), the length moved by pushes
    or pops, and ``closed`` turned on. Equal values under a new head identity still
    change the head, as the invalidation table requires."""
    from ..core.queue import CLOSE, POP, PUSH, UNPOP

    events: list[tuple[int, int]] = []
    length, head, closed = old
    new_length, new_head, new_closed = new
    if new_head != head and length > 0:
        if new_length > length:
            events.append((UNPOP, length))
            length += 1
        else:
            events.append((POP, length))
            length -= 1
    if new_length < length:
        events.append((POP, length))
        if new_length == 0 and length > 1:
            events.append((POP, 1))
    elif new_length > length:
        events.append((PUSH, length))
        if capacity is not None and new_length == capacity and length != capacity - 1:
            events.append((PUSH, capacity - 1))
    if new_closed and not closed:
        events.append((CLOSE, new_length))
    return events


class MirroredObject:
    """Shared plumbing of a broker storage: declaration on first use, the refresher, and
    :meth:`sync`. A subclass implements ``_declare()`` and ``_read()`` (fetch the
    broker's state, install it as the mirror and report what changed)."""

    kind = "object"
    #: Called before every operation and refresh (see :meth:`_notice`).
    _noticing: Callable[[], None] | None = None

    def __init__(self, name: str, *, poll_interval: float, label: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {shown(name)}")
        self.name = name
        self._declared = Declared(self._declare)
        self._refresher = Refresher(self._refresh, poll_interval=poll_interval, name=label)
        self._stopped = False
        #: Why the broker refused this object (its declaration), until a refresh succeeds.
        self._refused: Exception | None = None
        self._views_at = -poll_interval
        self._views_wanted = True
        self._checked_at = -poll_interval
        self._check_wanted = True
        self._refresher.start()

    async def _declare(self) -> None:
        raise NotImplementedError

    async def _read(self) -> None:
        raise NotImplementedError

    def _views_due(self) -> bool:
        """Whether this refresh also reads the views (``pending()``, ``elements()``, ...):
        on :meth:`sync`, and otherwise at most every ``poll_interval`` (the counts the
        readers use are read on every refresh)."""
        now = asyncio.get_running_loop().time()
        if self._views_wanted or now - self._views_at >= self._refresher.poll_interval:
            self._views_wanted = False
            self._views_at = now
            return True
        return False

    def _check_due(self) -> bool:
        """Whether this refresh also checks what the broker announces no change of (an
        operator's edit of a consumer): on :meth:`sync`, and otherwise at most every
        ``poll_interval``."""
        now = asyncio.get_running_loop().time()
        if self._check_wanted or now - self._checked_at >= self._refresher.poll_interval:
            self._check_wanted = False
            self._checked_at = now
            return True
        return False

    def _report_all(self) -> None:
        """Tell the cell every reader may have changed (wakes whatever waits on them)."""
        raise NotImplementedError

    def raise_if_stopped(self) -> None:
        """Raise :class:`~lazily_queue.brokers.errors.BrokerClosed` once the client was
        closed, and the error the broker refused the object with (incompatible settings,
        credentials) while it does (capability ``lifecycle``: either wakes every waiting
        call, which then raises it)."""
        self._raise_if_closed()
        refused = self._refused
        if refused is not None:
            raise type(refused)(str(refused))

    def unreachable(self) -> Exception | None:
        """A :class:`~lazily_queue.brokers.errors.BrokerUnavailable` naming the broker
        when the last refresh could not reach it, else ``None``: a wait on the mirror
        that reaches its deadline raises it (the mirror could not see the broker)."""
        from .errors import BrokerUnavailable

        error = self._refresher.last_error
        return BrokerUnavailable(str(error)) if isinstance(error, BrokerUnavailable) else None

    def _raise_if_closed(self) -> None:
        if self._stopped:
            from .errors import BrokerClosed

            raise BrokerClosed(f"{self.kind} {self.name!r}: the client was closed; open a new "
                               "one with lazily_queue.connect()")

    async def _refresh(self) -> None:
        self._notice()
        await self._ensure_declared()
        await self._read()

    async def _ensure_declared(self) -> None:
        """Declare the object unless it is; what the broker refuses it with is kept (see
        :meth:`raise_if_stopped`) until a declaration succeeds."""
        from .errors import BrokerAuthenticationFailed, IncompatibleBrokerObject

        try:
            await self._declared.ensure()
        except (IncompatibleBrokerObject, BrokerAuthenticationFailed) as exc:
            if self._refused is None:
                self._refused = exc
                self._report_all()
            raise
        if self._refused is not None:
            self._refused = None
            self._report_all()

    def _notice(self) -> None:
        """Before every operation and refresh: what the backend noticed meanwhile (a NATS
        connection the backend does not own that reconnected) is acted on first."""
        if self._noticing is not None:
            self._noticing()

    async def _ready(self) -> None:
        """Before an operation: the object is declared (raises what declaring raised)."""
        self._raise_if_closed()
        self._notice()
        self._refresher.start()
        await self._declared.ensure()

    def _changed(self) -> None:
        """After an operation or a notification: refresh the mirror soon."""
        self._refresher.poke()

    def redeclare(self) -> None:
        """The object's settings on the broker may have changed (an operator's, announced
        or made while this process was disconnected): check them again, as where the
        object is opened, before its next operation and in a refresh now (which refuses
        the object, waking every waiting call, while they do not fit)."""
        self._declared.forget()
        self._changed()

    async def _check_again(self) -> None:
        """Check the object's settings on the broker now, as where it is opened (raises
        what the broker refuses it with)."""
        self._declared.forget()
        await self._ensure_declared()

    async def declare(self) -> None:
        """Create or check the broker objects now (the first operation does it otherwise);
        raises :class:`~lazily_queue.brokers.errors.IncompatibleBrokerObject` when
        they exist with other settings."""
        await self._ready()

    async def sync(self) -> None:
        """Return once the mirror reflects every operation that returned before the call
        (one refresh); raises what that refresh raised."""
        await self._ready()
        self._views_wanted = self._check_wanted = True
        await self._refresher.sync()

    async def aclose(self) -> None:
        """Stop refreshing (the broker's objects stay) and wake every waiting call, which
        then fails with ``BrokerClosed``."""
        if self._stopped:
            return
        self._stopped = True
        await self._refresher.stop()
        self._report_all()


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark ``future``'s outcome as seen (no "exception was never retrieved" log)."""
    if not future.cancelled():
        future.exception()

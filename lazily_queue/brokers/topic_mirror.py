"""The read side every broker topic shares: a mirror of the stream's window and of its
subscribers' cursors, refreshed by the backend, read by the cells' readers."""

from __future__ import annotations

from typing import Any

from ..core.topic import Durability
from ..storage.topic import TopicChangeListener
from .errors import SubscriberConsumerLost
from .mirror import MirroredObject

Record = tuple[str, bool, int]
"""A subscriber as the broker keeps it: durability, connected, cursor."""


def reader_keys(base: int, end: int, subs: dict[str, Record]) -> dict[str, Any]:
    """What each subscriber's reader depends on; a change in it invalidates the reader."""
    return {sid: (rec[0], rec[1], rec[2], end if rec[1] else None)
            for sid, rec in subs.items()}


class TopicMirror(MirroredObject):
    """The mirrored window (``base``..``end``), its elements and the subscribers."""

    def __init__(self, name: str, *, poll_interval: float, label: str) -> None:
        self._listener: TopicChangeListener | None = None
        self._base = 0
        self._end = 0
        self._elements: list[Any] = []
        self._subs: dict[str, Record] = {}
        #: Durable subscribers that vanished from the broker while known: why.
        self._vanished: dict[str, SubscriberConsumerLost] = {}
        super().__init__(name, poll_interval=poll_interval, label=label)

    def _lost_error(self, subscriber: str) -> SubscriberConsumerLost:
        """The error of ``subscriber``, durable, gone from the broker while known."""
        raise NotImplementedError

    def _install(self, base: int, end: int, elements: list[Any],
                 subs: dict[str, Record]) -> None:
        """Show what a refresh read; the readers whose inputs changed are invalidated,
        and a durable subscriber gone from the broker is remembered as lost."""
        subs = self._no_rewind(subs)
        for sid, rec in self._subs.items():
            if rec[0] == Durability.DURABLE.value and sid not in subs:
                self._vanished[sid] = self._lost_error(sid)
        old = reader_keys(self._base, self._end, self._subs)
        new = reader_keys(base, end, subs)
        self._base, self._end, self._elements, self._subs = base, end, elements, subs
        changed = frozenset(s for s in old.keys() | new.keys() if old.get(s) != new.get(s))
        if changed and self._listener is not None:
            self._listener(changed)

    # -- reads (the mirror) --------------------------------------------------------------

    def read(self, subscriber: str) -> Any:
        unread = self.read_stream(subscriber, 1)
        return unread[0] if unread else None

    def read_stream(self, subscriber: str, limit: int | None = None) -> list[Any] | None:
        rec = self._subs.get(subscriber)
        if rec is None or not rec[1]:
            return None
        start = max(0, rec[2] - self._base)
        stop = len(self._elements) if limit is None else start + limit
        return self._elements[start:stop]

    def lost(self, subscriber: str) -> SubscriberConsumerLost | None:
        """Why ``subscriber``, a durable subscriber this process knew, is gone: deleted
        outside this library (``None`` when it was not)."""
        if subscriber in self._subs:
            return None
        return self._vanished.get(subscriber)

    def cursor(self, subscriber: str) -> int | None:
        rec = self._subs.get(subscriber)
        return None if rec is None else rec[2]

    def base_offset(self) -> int:
        return self._base

    def end_offset(self) -> int:
        return self._end

    def elements(self) -> list[Any]:
        return list(self._elements)

    def subscriptions(self) -> dict[str, dict[str, Any]]:
        return {sid: {"durability": d, "connected": c, "cursor": cur}
                for sid, (d, c, cur) in self._subs.items()}

    def snapshot(self) -> dict[str, Any]:
        return {"base_offset": self._base, "elements": self.elements(),
                "subscriptions": self.subscriptions()}

    def _report_all(self) -> None:
        if self._listener is not None and self._subs:
            self._listener(frozenset(self._subs))

    def set_change_listener(self, listener: TopicChangeListener | None) -> None:
        self._listener = listener

    def _moved(self, subscriber: str, cursor: int) -> None:
        """This process advanced ``subscriber`` to ``cursor``: show it now (a stream
        must not read the consumed elements again before the next refresh)."""
        rec = self._subs.get(subscriber)
        if rec is not None and cursor > rec[2]:
            self._subs[subscriber] = (rec[0], rec[1], cursor)
            if self._listener is not None:
                self._listener(frozenset((subscriber,)))
        self._changed()

    def _no_rewind(self, subs: dict[str, Record]) -> dict[str, Record]:
        """``subs`` read from the broker, with no cursor behind the one this process
        already showed (a refresh that started before an advance returns its old
        cursor; cursors only move forward)."""
        for sid, rec in subs.items():
            mine = self._subs.get(sid)
            if mine is not None and mine[:2] == rec[:2] and mine[2] > rec[2]:
                subs[sid] = mine
        return subs

"""Watchers: which clients mirror which objects of a member, and what goes to them as
the member applies entries (the state machine's tap reports the ops on watched objects).

A client watching an object gets every op reported on it, in apply order (``REPLAY``),
and the object anew when it was replaced or a snapshot installed (``RESET``). A client
reading a work queue only as a consumer group's is guarded
(:meth:`~.connection.ClientConnection.admits`): when the name becomes another object
it gets that object as it stands, or is refused it and stops watching it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..replicated import objects, ops
from ..replicated.events import Event, OpApplied, Replaced, Restored
from . import protocol as P
from .connection import ClientConnection, Key

if TYPE_CHECKING:
    from ..replicated.view import ReadView


#: Objects one client link may watch, and the bytes of their names in all.
MAX_WATCHES = 4096
MAX_WATCHED_NAME_BYTES = 16 * 2**20
#: Characters of the names one client watches through all its links: twice what one
#: link may, however many links it holds.
MAX_CLIENT_WATCHED_CHARS = 2 * MAX_WATCHED_NAME_BYTES


class Watchers:
    """The clients watching each object of one member."""

    def __init__(self, view: Callable[[], ReadView]) -> None:
        self._view = view
        self.by_key: dict[Key, set[ClientConnection]] = {}
        #: Characters of the names each client watches through all its links.
        self.by_client: dict[str, int] = {}

    def add(self, conn: ClientConnection, key: Key) -> None:
        """``conn`` (whose read of ``key`` was granted) watches it from the state now."""
        if key not in conn.watches:
            conn.watches.add(key)
            conn.watched_bytes += len(key[1])
            client = conn.grant.name
            self.by_client[client] = self.by_client.get(client, 0) + len(key[1])
        conn.guard(key, self._view())
        self.by_key.setdefault(key, set()).add(conn)

    def drop(self, conn: ClientConnection, key: Key) -> None:
        if key in conn.watches:
            conn.watches.discard(key)
            conn.watched_bytes -= len(key[1])
            client = conn.grant.name
            left = self.by_client[client] - len(key[1])
            if left:
                self.by_client[client] = left
            else:
                del self.by_client[client]
        conn.guarded.pop(key, None)
        watchers = self.by_key.get(key)
        if watchers is not None:
            watchers.discard(conn)
            if not watchers:
                del self.by_key[key]

    def watch(self, conn: ClientConnection, rid: int, frame: list[Any]) -> None:
        """A WATCH request: ``conn`` reads the object it names, within its grant and
        :data:`MAX_WATCHES` objects; answered with the object as it stands."""
        key = _key(frame)
        refusal = conn.read_refusal(*key)
        if refusal is not None:
            raise P.PermissionDenied(refusal)
        if key not in conn.watches and (
                len(conn.watches) >= MAX_WATCHES
                or conn.watched_bytes + len(key[1]) > MAX_WATCHED_NAME_BYTES):
            raise P.RequestRefused(
                f"a client link reads at most {MAX_WATCHES} objects, their names "
                f"{MAX_WATCHED_NAME_BYTES // 2**20} MiB in all; it reads {len(conn.watches)} "
                "already: read fewer objects through one client, or open another")
        held = self.by_client.get(conn.grant.name, 0)
        if key not in conn.watches and held + len(key[1]) > MAX_CLIENT_WATCHED_CHARS:
            raise P.RequestRefused(
                f"client {conn.grant.name!r} reads objects whose names have at most "
                f"{MAX_CLIENT_WATCHED_CHARS:,} characters in all through all its links, and "
                f"reads {held:,} already: read fewer objects, or ones of shorter names")
        view = self._view()
        self.add(conn, key)
        conn.send_state([rid, P.OK, [view.tapped, conn.capture(view, key)]])

    def unwatch(self, conn: ClientConnection, rid: int, frame: list[Any]) -> None:
        """An UNWATCH request."""
        self.drop(conn, _key(frame))
        conn.send([rid, P.OK, None])

    def on_events(self, events: Sequence[Event]) -> None:
        """Forward the ops applied here to the clients watching their objects."""
        by_key = self.by_key
        if not by_key:
            return
        touched: list[ClientConnection] = []
        revoked: list[ClientConnection] = []
        view = self._view()
        for event in events:
            if type(event) is OpApplied:
                op = event.op
                kind = ops.family_of_op(op[0], op[1:])
                if kind is None or len(op) < 2 or not isinstance(op[1], str):
                    continue
                key = (kind, op[1])
                for conn in by_key.get(key, ()):
                    if (conn.guarded and key in conn.guarded
                            and not conn.admits(key, event.index, view)):
                        if conn.revoked:
                            revoked.append(conn)
                        continue
                    if not conn.replay:
                        touched.append(conn)
                    conn.replay.append([kind, op[1], event.index, event.now, op])
            elif type(event) is Replaced:
                _flush(touched)
                touched = []
                self._reset((event.kind, event.name), view, revoked)
            elif type(event) is Restored:
                _flush(touched)
                touched = []
                for key in by_key:
                    self._reset(key, view, revoked)
        _flush(touched)
        for conn in revoked:
            keys, conn.revoked = conn.revoked, []
            for key in keys:
                self.drop(conn, key)

    def _reset(self, key: Key, view: ReadView, revoked: list[ClientConnection]) -> None:
        """Send the watchers of ``key`` the object as applied here now (those reading it
        only as a consumer group's, if they still may)."""
        docs: dict[bool, Any] = {}  # by form (runs or items)
        for conn in self.by_key.get(key, ()):
            if key in conn.guarded:
                conn.settle(key, view)
                if conn.revoked:
                    revoked.append(conn)
            else:
                runs = conn.protocol >= P.RUNS_VERSION
                if runs not in docs:
                    docs[runs] = objects.capture(view, *key, runs=runs)
                conn.send([0, P.RESET, [*key, view.tapped, docs[runs]]])


def _flush(touched: list[ClientConnection]) -> None:
    for conn in touched:
        replay, conn.replay = conn.replay, []
        conn.send([0, P.REPLAY, replay])


def _key(frame: list[Any]) -> Key:
    if len(frame) != 4 or frame[2] not in objects.KINDS or not isinstance(frame[3], str):
        raise P.RequestRefused(f"a watch is [id, kind, one of {objects.KINDS}, name]")
    return frame[2], frame[3]

"""Ephemeral subscriptions owned by client sessions, and the liveness of those sessions.

An ephemeral subscription a client's op subscribes (``Subscribed``, under the client's
session: ``CLIENT_OP`` / ``CLIENT_OPS``) is owned by that session, noted with the entry's
stamp. The latest subscribe of an id decides its owner: a client subscribing an id
already connected (``AlreadyConnected``) takes it over, from another client or from a
member; a member subscribing it (outside a client session) leaves it without one. An
owner is forgotten when its subscription is disconnected or deleted by any means (the
subscriber, its topic deleted or restored). Subscriptions a member holds have no owner
and are never reaped.

- ``CLIENT_ALIVE`` ``[[session, ...]]``: a member serving those sessions' clients says
  they are alive: each listed owner is refreshed at the entry's stamp (and so is its
  session in the table of sessions, which would otherwise expire an idle one).
- ``EPHEMERAL_REAP`` ``[grace_ms]``: disconnects (so removes) every ephemeral
  subscription whose owner was not refreshed within ``grace_ms`` of the entry's stamp.
  The leader proposes it (:mod:`lazily_queue.maintenance`) when an owner is stale.

A session dropped from the table of sessions loses its ephemeral subscriptions too.
The disconnects are applied as ``TOPIC_DISCONNECT`` ops, so watchers see them. Every
decision reads the entry's stamp (``sm.now``), never a clock. Snapshot section
``ephemeral_owners`` (``[[session, alive_ms, [[topic, subscriber], ...]], ...]`` by
session, left out while there is none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.topic_subscriptions import Durability
from ..errors import shown
from . import ops
from .client_sessions import CLIENT_SESSION_BASE
from .family import Family, Section
from .ops import OpRefused

if TYPE_CHECKING:
    from .state_machine import StateMachine

#: Milliseconds an owner session may go unrefreshed before its subscriptions are reaped
#: (longer than a client takes to link to another member).
GRACE_MS = 90_000

#: The ops that may subscribe a new ephemeral subscriber.
SUBSCRIBE_OPS = frozenset({ops.TOPIC_SUBSCRIBE, ops.TOPIC_SUBSCRIBE_AT,
                           ops.TOPIC_SUBSCRIBE_AT_TIME})
#: The ops that may end a subscription (checked again after they applied).
ENDING_OPS = frozenset({ops.TOPIC_DISCONNECT, ops.TOPIC_DELETE_SUBSCRIBER, ops.TOPIC_DELETE,
                        ops.TOPIC_RESTORE})
#: Ops naming one subscriber as their second argument.
_ONE_SUBSCRIBER = frozenset({ops.TOPIC_DISCONNECT, ops.TOPIC_DELETE_SUBSCRIBER})

Key = tuple[str, str]


class EphemeralOwners:
    """Which client session owns each ephemeral subscription, and when each owner was
    last seen alive (ms of leader time)."""

    __slots__ = ("alive", "by_session", "owner")

    def __init__(self) -> None:
        #: Owner session -> the stamp it was last refreshed (or subscribed) at.
        self.alive: dict[int, int] = {}
        #: Owner session -> its ``(topic, subscriber)`` subscriptions.
        self.by_session: dict[int, dict[Key, None]] = {}
        #: ``(topic, subscriber)`` -> its owner session.
        self.owner: dict[Key, int] = {}

    def __len__(self) -> int:
        return len(self.owner)

    def own(self, sid: int, key: Key, now: int) -> None:
        previous = self.owner.get(key)
        if previous is not None and previous != sid:
            self.forget(key)
        self.owner[key] = sid
        self.by_session.setdefault(sid, {})[key] = None
        self.alive[sid] = max(now, self.alive.get(sid, now))

    def forget(self, key: Key) -> None:
        sid = self.owner.pop(key, None)
        if sid is None:
            return
        keys = self.by_session[sid]
        del keys[key]
        if not keys:
            del self.by_session[sid]
            del self.alive[sid]

    def stale(self, horizon: int) -> Iterator[int]:
        """The owner sessions last refreshed before ``horizon`` (ms), in no set order
        (the order of :attr:`alive` differs after a snapshot: sort them to act on them)."""
        return (sid for sid, seen in self.alive.items() if seen < horizon)


def _outcome(result: Any) -> Any:
    if type(result) is list and len(result) == 2 and result[0] == "ok":
        return result[1]
    return result


def _held(sm: StateMachine, key: Key) -> bool:
    """Whether ``key`` names a connected ephemeral subscription."""
    topic = sm.topics.get(key[0])
    record = None if topic is None else topic.subscription(key[1])
    return (record is not None and record["connected"]
            and record["durability"] == Durability.EPHEMERAL.value)


def subscribed(sm: StateMachine, sid: int | None, code: int, args: list[Any],
               result: Any) -> None:
    """After op ``code`` (one of :data:`SUBSCRIBE_OPS`) applied in client session ``sid``
    (``None``: a member's op): the ephemeral subscription it started or joined is
    ``sid``'s (a member's has no owner)."""
    if len(args) < 2 or type(args[0]) is not str or type(args[1]) is not str:
        return
    outcome = _outcome(result)
    if outcome != "Subscribed" and outcome != "AlreadyConnected":
        return
    key = (args[0], args[1])
    owners = sm.ephemeral_owners
    if sid is None:
        owners.forget(key)
    elif _held(sm, key):
        owners.own(sid, key, sm.now)


def ended(sm: StateMachine, code: int, args: list[Any]) -> None:
    """After op ``code`` (one of :data:`ENDING_OPS`) applied: forget the owners of the
    subscriptions it ended."""
    owners = sm.ephemeral_owners
    if not owners.owner or not args or type(args[0]) is not str:
        return
    if code in _ONE_SUBSCRIBER:
        keys: list[Key] = ([(args[0], args[1])] if len(args) > 1 and type(args[1]) is str
                           else [])
    else:
        keys = [key for key in owners.owner if key[0] == args[0]]
    for key in keys:
        if key in owners.owner and not _held(sm, key):
            owners.forget(key)


def drop_session(sm: StateMachine, sid: int) -> int:
    """Disconnect (so remove) the ephemeral subscriptions session ``sid`` owns; how many."""
    keys = list(sm.ephemeral_owners.by_session.get(sid, ()))
    for topic, subscriber in keys:
        sm.apply_plain(ops.TOPIC_DISCONNECT, [topic, subscriber])
        sm.ephemeral_owners.forget((topic, subscriber))  # even if it did not apply
    return len(keys)


def _refresh(sm: StateMachine, args: list[Any]) -> Any:
    if len(args) != 1 or type(args[0]) is not list:
        raise OpRefused("bad_args", "client_alive is [[session, ...]]")
    owners = sm.ephemeral_owners
    refreshed = 0
    for sid in args[0]:
        if type(sid) is int and sid in owners.alive:
            owners.alive[sid] = sm.now
            refreshed += 1
            session = sm.sessions.get(sid)
            if session is not None:
                sm.sessions.move_to_end(sid)
                sm.client_counts.seen(sid)
                session.seen = sm.now
    return refreshed


def _reap(sm: StateMachine, args: list[Any]) -> Any:
    grace = args[0] if len(args) == 1 else None
    if type(grace) is not int or grace < 0:
        raise OpRefused("bad_args", f"ephemeral_reap is [grace_ms >= 0], got {shown(args)}")
    removed = 0
    for sid in sorted(sm.ephemeral_owners.stale(sm.now - grace)):
        removed += drop_session(sm, sid)
    return removed


def _capture(sm: StateMachine) -> list[Any] | None:
    owners = sm.ephemeral_owners
    return [[sid, owners.alive[sid], [list(key) for key in owners.by_session[sid]]]
            for sid in sorted(owners.by_session)] or None


def _restore(sm: StateMachine, doc: Any) -> None:
    owners = EphemeralOwners()
    if doc is not None:
        if not isinstance(doc, list):
            raise ValueError("snapshot section 'ephemeral_owners' must be a list of "
                             "[session, alive_ms, [[topic, subscriber], ...]]")
        for sid, alive, keys in doc:
            if type(sid) is not int or sid <= CLIENT_SESSION_BASE:
                raise ValueError(f"snapshot section 'ephemeral_owners': {shown(sid)} is not "
                                 "a client session id")
            for topic, subscriber in keys:
                owners.own(sid, (str(topic), str(subscriber)), int(alive))
            if sid in owners.alive:
                owners.alive[sid] = int(alive)
    sm.ephemeral_owners = owners


FAMILY = Family(
    "ephemeral_owners",
    {ops.CLIENT_ALIVE: _refresh, ops.EPHEMERAL_REAP: _reap},
    (Section("ephemeral_owners", _capture, _restore),),
)

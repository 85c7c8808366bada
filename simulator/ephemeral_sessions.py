"""Cluster clients owning ephemeral subscriptions, and the model of their owners.

An :class:`EphemeralSessionClient` declares its topic, subscribes a durable id and two
ephemeral ones under its client session, then publishes a few times; meanwhile its
member says it is alive (``CLIENT_ALIVE``) and now and then subscribes, as a member,
an ephemeral id of its own or one of the client's (which then has no owner), and the
client subscribes the member's (which it then owns). At the end it closes cleanly
(``SESSION_END``) or crashes, and the leader reaps the stale owners
(``EPHEMERAL_REAP`` with a short grace).

:class:`EphemeralSessionsModel` replays those ops in log order: which subscriptions
the topic holds, who owns each (the latest subscribe of an id decides), when each
owner was last refreshed; it checks every result, and at the end that the replica's
topic, owners and ended sessions are the model's: an ended or reaped session's
ephemeral subscriptions are gone, the rest is as it was. The recording state machine
checks at apply time that dropping a session, or a reap, changes nothing else in the
state (:func:`.history.check_drop`).
"""

from __future__ import annotations

import random
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.session_end import ENDED
from lazily_queue.replicated.state_machine import CLIENT_SESSION_BASE

from .client import Host
from .history import AppliedOp, Violation
from .session_client import SessionClient

#: The topic these clients subscribe to (no other client uses it).
EPH_TOPIC = "eph-sessions"
_SUBSCRIBES = (C.TOPIC_SUBSCRIBE, C.TOPIC_SUBSCRIBE_AT)
_CODES = frozenset({C.CLIENT_ALIVE, C.EPHEMERAL_REAP, C.SESSION_END})


class EphemeralSessionClient(SessionClient):
    """Subscribes under its session, publishes, then ends its session or crashes."""

    kind = "ephemeral-session"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.todo: list[tuple[int, list[Any]]] = [
            (C.TOPIC_DECLARE, [EPH_TOPIC]),
            (C.TOPIC_SUBSCRIBE, [EPH_TOPIC, f"{cid}-d", "durable"]),
            (C.TOPIC_SUBSCRIBE, [EPH_TOPIC, f"{cid}-e1", "ephemeral"]),
            (C.TOPIC_SUBSCRIBE_AT, [EPH_TOPIC, f"{cid}-e2", "ephemeral", "head"]),
        ]
        self.publishes = rng.randrange(2, 8)
        self.ends = rng.random() < 0.6
        self.grace = rng.choice([0, 50, 400])
        self.n = 0
        self.finished = False

    def next_inner(self) -> tuple[int, list[Any]] | None:
        rng = self.rng
        if self.todo:
            return self.todo.pop(0)
        if self.finished:
            return None
        if self.publishes > 0 and not self.draining:
            self.publishes -= 1
            self.n += 1
            roll = rng.random()
            if roll < 0.4:  # its member's liveness refresh
                self._as_member(C.CLIENT_ALIVE, [[self.session]])
            elif roll < 0.55:  # a member subscribes an id of its own, or the client's
                self._as_member(C.TOPIC_SUBSCRIBE, [EPH_TOPIC, rng.choice(
                    [f"{self.cid}-m", f"{self.cid}-e1"]), "ephemeral"])
            elif roll < 0.7:  # the client subscribes the member's (taking it over)
                return C.TOPIC_SUBSCRIBE, [EPH_TOPIC, f"{self.cid}-m", "ephemeral"]
            return C.TOPIC_PUBLISH, [EPH_TOPIC, f"{self.cid}:{self.n}"]
        self.finished = True
        if self.ends:
            return C.SESSION_END, []
        self._as_member(C.EPHEMERAL_REAP, [self.grace])  # crashed: the leader reaps
        return None

    def _as_member(self, code: int, args: list[Any]) -> None:
        running = self._running()
        if running:
            self.cluster.propose_detached(self.rng.choice(running), code, args, 5.0)


def _outcome(result: Any) -> Any:
    if type(result) is list and len(result) == 2 and result[0] == "ok":
        return result[1]
    return result


class EphemeralSessionsModel:
    """The subscriptions of :data:`EPH_TOPIC`, their owners and the ended sessions."""

    def __init__(self) -> None:
        self.declared = False
        #: Subscriber -> its durability.
        self.subs: dict[str, str] = {}
        self.owner: dict[str, int] = {}
        self.alive: dict[int, int] = {}
        self.ended: set[int] = set()
        #: Ephemeral subscriptions removed with their session; reaps; owners changed.
        self.removed = 0
        self.reaps = 0
        self.takeovers = 0

    def handles(self, op: AppliedOp) -> bool:
        return op.code in _CODES or (bool(op.args) and op.args[0] == EPH_TOPIC)

    def apply(self, op: AppliedOp, now: int) -> None:
        """Apply ``op``, applied at leader time ``now`` (ms), checking its result."""
        code, args, sid = op.code, op.args, op.session
        client = sid > CLIENT_SESSION_BASE
        if client and sid in self.ended:
            op.expect(None if code == C.SESSION_END else ENDED)
        elif code == C.TOPIC_DECLARE:
            self.declared = True
        elif code in _SUBSCRIBES and self.declared:
            self._subscribe(op, now, args[1], args[2], sid if client else None)
        elif code == C.CLIENT_ALIVE:
            listed = [s for s in args[0] if s in self.alive]
            for s in listed:
                self.alive[s] = now
            op.expect(len(listed))
        elif code == C.EPHEMERAL_REAP:
            self.reaps += 1
            stale = [s for s, seen in self.alive.items() if seen < now - args[0]]
            op.expect(sum(self._drop(s) for s in stale))
        elif code == C.SESSION_END and client:
            self._drop(sid)
            self.ended.add(sid)
            op.expect(None)

    def _subscribe(self, op: AppliedOp, now: int, subscriber: str, durability: str,
                   sid: int | None) -> None:
        held = subscriber in self.subs
        outcome = _outcome(op.result)
        if outcome != ("AlreadyConnected" if held else "Subscribed"):
            raise Violation(f"index {op.index}: subscribing {subscriber!r} answered "
                            f"{op.result!r}, the model says it was held: {held}")
        if not held:
            self.subs[subscriber] = durability
        self.takeovers += held and self.owner.get(subscriber) != sid
        self._forget(subscriber)
        if sid is not None and self.subs[subscriber] == "ephemeral":
            self.owner[subscriber] = sid
            self.alive[sid] = now

    def _forget(self, subscriber: str) -> None:
        sid = self.owner.pop(subscriber, None)
        if sid is not None and sid not in self.owner.values():
            del self.alive[sid]

    def _drop(self, sid: int) -> int:
        mine = [s for s, owner in self.owner.items() if owner == sid]
        for subscriber in mine:
            self._forget(subscriber)
            del self.subs[subscriber]
        self.alive.pop(sid, None)
        self.removed += len(mine)
        return len(mine)

    def check_final(self, state: dict[str, Any]) -> None:
        topic = state.get("topics", {}).get(EPH_TOPIC)
        held = {} if topic is None else {
            name: record["durability"] for name, record in topic["subscriptions"].items()}
        if held != self.subs:
            raise Violation(f"topic {EPH_TOPIC!r} holds {held!r:.200}, the model "
                            f"{self.subs!r:.200}")
        owners = {key[1]: sid for sid, _, keys in state.get("ephemeral_owners") or []
                  for key in keys if key[0] == EPH_TOPIC}
        if owners != self.owner:
            raise Violation(f"ephemeral owners {owners!r:.200}, the model {self.owner!r:.200}")
        ended = {sid for sid, _ in state.get("ended_sessions") or []}
        sessions = {int(sid) for sid in state.get("sessions", {})}
        if not self.ended <= ended or self.ended & sessions:
            raise Violation(f"ended sessions {sorted(self.ended - ended)} not noted, or "
                            f"{sorted(self.ended & sessions)} still in the table")


"""Topic options in the simulation: topics with limits (``reject`` and ``drop_oldest``),
an age limit, per-message TTLs and headers, and the checker's model of them.

:class:`TopicOptionsClient` declares :data:`TOPICS` (``tr``: limits that reject; ``to``:
``drop_oldest`` limits with an age limit), subscribes to both as a durable subscriber of
its own, then publishes (plain, or with a TTL, headers and/or a msg_id, sometimes the
previous one again, through ``TOPIC_PUBLISH_OPTIONS``), advances, collects and sweeps,
under every fault. The leader's own sweeps and topic GCs land in the log too.
:class:`TopicOptionsModel` replays every op on those topics by the contract's rules,
independently of the library: an element's
deadline is the earlier of its stamp plus its own TTL and its stamp plus the topic's age
limit; a publish first drops the expired elements at the head, then the limits judge it
(``reject``: refused, ``full``; ``drop_oldest``: the oldest leave, counted, cursors
behind move up); an advance at stamp ``now`` skips the expired elements at the cursor.
The properties, each a failed run when broken:

- no expired element delivered: an advance that returns an element at or after its
  deadline (the model's result differs);
- a ``reject`` topic never holds more than its limits, and refuses exactly what they
  refuse;
- a repeated msg_id (a run is far shorter than the dedup window's age) applies nothing
  and answers the first offset;
- the drops are counted: each replica's dropped count and gaps are the model's, and its
  expired count, retained elements, cursors and headers at the end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from lazily_queue.replicated import ops as C
from lazily_queue.replicated.ops import OpError

from .client import OK, Client, Host, Observed
from .expiry import _ignore, sweep_args, sweep_limit
from .history import AppliedOp, Violation

#: name -> (limits [max_length, max_bytes, overflow], age limit in ms or None)
TOPICS: dict[str, tuple[list[Any], int | None]] = {
    "tr": ([3, 48, "reject"], None),
    "to": ([4, 64, "drop_oldest"], 400),
}
#: The ops the model answers on those topics.
OPS = frozenset({C.TOPIC_DECLARE_LIMITED, C.EXPIRY_RULES, C.TOPIC_SUBSCRIBE, C.TOPIC_PUBLISH,
                 C.TOPIC_PUBLISH_OPTIONS, C.TOPIC_ADVANCE, C.TOPIC_GC, C.EXPIRE})


@dataclass
class Element:
    value: str
    stamp: int
    deadline: int | None
    headers: dict[str, str] | None


@dataclass
class OptionTopic:
    """One topic of the model: its log from ``base``, its durable cursors and counts."""

    max_length: int
    max_bytes: int
    overflow: str
    age: int | None = None
    base: int = 0
    log: list[Element] = field(default_factory=list)
    cursors: dict[str, int] = field(default_factory=dict)
    dropped: int = 0
    gaps: dict[str, int] = field(default_factory=dict)
    expired: int = 0
    delivered: int = 0

    def held(self) -> int:
        return sum(len(e.value.encode()) for e in self.log)

    def end(self) -> int:
        return self.base + len(self.log)

    def _drop(self, k: int, count_gaps: bool) -> None:
        self.log = self.log[k:]
        self.base += k
        for sid, cursor in self.cursors.items():
            if cursor < self.base:
                if count_gaps:
                    self.gaps[sid] = self.gaps.get(sid, 0) + self.base - cursor
                self.cursors[sid] = self.base

    def expire(self, now: int, limit: int | None = None) -> int:
        n = 0
        while (n < len(self.log) and (limit is None or n < limit)
               and _expired(self.log[n], now)):
            n += 1
        if n:
            self._drop(n, False)
            self.expired += n
        return n

    def publish(self, value: str, stamp: int, ttl: int | None,
                headers: dict[str, str] | None) -> int | str:
        """The offset, or ``"full"`` (nothing appended)."""
        self.expire(stamp)
        size = len(value.encode())
        if size > self.max_bytes:
            return "full"
        need = max(0, len(self.log) + 1 - self.max_length)
        over, k = self.held() + size - self.max_bytes, 0
        while over > 0 and k < len(self.log):
            over -= len(self.log[k].value.encode())
            k += 1
        need = max(need, k)
        if need:
            if self.overflow == "reject":
                return "full"
            self._drop(need, True)
            self.dropped += need
        deadlines = [d for d in (None if ttl is None else stamp + ttl,
                                 None if self.age is None else stamp + self.age) if d is not None]
        self.log.append(Element(value, stamp, min(deadlines) if deadlines else None, headers))
        return self.end() - 1

    def advance(self, sid: str, now: int) -> str | None:
        cursor = self.cursors.get(sid)
        if cursor is None:
            return None
        while cursor < self.end() and _expired(self.log[cursor - self.base], now):
            cursor += 1
        if cursor >= self.end():
            self.cursors[sid] = cursor
            return None
        self.cursors[sid] = cursor + 1
        self.delivered += 1
        return self.log[cursor - self.base].value

    def gc(self, now: int) -> int:
        frontier = min(self.cursors.values()) if self.cursors else self.end()
        removed = max(0, frontier - self.base)
        if removed:
            self._drop(removed, False)
        return removed + self.expire(now)


def _expired(element: Element, now: int) -> bool:
    return element.deadline is not None and now >= element.deadline


class TopicOptionsModel:
    """The topics of :data:`TOPICS` (module docstring)."""

    def __init__(self) -> None:
        self.topics: dict[str, OptionTopic] = {}
        #: ``(topic, msg_id)`` -> the first publish's offset (the window: a run is far
        #: shorter than its age, so it forgets none).
        self.ids: dict[tuple[str, str], int] = {}
        self.repeats = 0
        #: Publishes the limits refused (as the replicas did).
        self.refused = 0

    @property
    def delivered(self) -> int:
        return sum(t.delivered for t in self.topics.values())

    @property
    def expired(self) -> int:
        return sum(t.expired for t in self.topics.values())

    @staticmethod
    def handles(op: AppliedOp) -> bool:
        return (op.code in OPS and bool(op.args) and op.args[0] in TOPICS
                and (op.code not in (C.EXPIRY_RULES, C.EXPIRE) or op.args[1:2] == ["topic"]))

    def apply(self, op: AppliedOp, now: int) -> None:
        name, code, args = op.args[0], op.code, op.args
        topic = self.topics.get(name)
        if code == C.TOPIC_DECLARE_LIMITED:
            if args[1] != TOPICS[name][0]:
                raise Violation(f"index {op.index}: {name} declared with {args[1]!r}")
            if topic is None:
                self.topics[name] = OptionTopic(*TOPICS[name][0])
            op.expect(None)
            return
        if topic is None:
            if not isinstance(op.result, OpError) and not (code == C.EXPIRE and op.result == 0):
                raise Violation(f"index {op.index}: {C.op_name(code)} on {name} before its "
                                f"declaration returned {op.result!r:.60}")
            return
        if code == C.EXPIRY_RULES:
            if args[2:] != [None, TOPICS[name][1]]:
                raise Violation(f"index {op.index}: {name} given rules {args[2:]!r}")
            topic.age = TOPICS[name][1]
            op.expect(None)
        elif code == C.TOPIC_SUBSCRIBE:
            known = args[1] in topic.cursors
            topic.cursors.setdefault(args[1], topic.end())
            op.expect("AlreadyConnected" if known else "Subscribed")
        elif code in (C.TOPIC_PUBLISH, C.TOPIC_PUBLISH_OPTIONS):
            options = args[1] if code == C.TOPIC_PUBLISH_OPTIONS else {}
            key = (name, options.get("msg_id", ""))
            first = self.ids.get(key) if key[1] else None
            if first is not None:
                self.repeats += 1  # the window answers: nothing applies, not even expiry
                op.expect(first)
                return
            result = topic.publish(args[-1], now, options.get("ttl_ms"), options.get("headers"))
            if key[1] and result != "full":
                self.ids[key] = int(result)
            if result == "full":
                self.refused += 1
                if not (isinstance(op.result, OpError) and op.result.code == "full"):
                    raise Violation(f"index {op.index}: a publish to {name} past its limits "
                                    f"returned {op.result!r:.80}, the model refuses it")
            else:
                op.expect(result)
        elif code == C.TOPIC_ADVANCE:
            got = topic.advance(args[1], now)
            if op.result != got:
                raise Violation(f"index {op.index}: an advance of {args[1]} on {name} at "
                                f"{now} returned {op.result!r:.60}, the model {got!r:.60} "
                                "(an expired element delivered, or a live one lost)")
        elif code == C.TOPIC_GC:
            op.expect(topic.gc(now))
        else:  # EXPIRE
            op.expect(topic.expire(now, sweep_limit(args)))

    def check_final(self, state: dict[str, Any]) -> None:
        """Each replica's state of the topics is the model's."""
        for name, topic in self.topics.items():
            snap = state.get("topics", {}).get(name)
            if snap is None:
                raise Violation(f"topic {name} is missing from a replica")
            values = [e.value for e in topic.log]
            if snap["base_offset"] != topic.base or snap["elements"] != values:
                raise Violation(f"{name} holds {snap['base_offset']}:{snap['elements']!r:.100}, "
                                f"the model {topic.base}:{values!r:.100}")
            cursors = {sid: r["cursor"] for sid, r in snap["subscriptions"].items()}
            if cursors != topic.cursors:
                raise Violation(f"{name} cursors {cursors}, the model {topic.cursors}")
            entry = (state.get("limits") or {}).get("topics", {}).get(name)
            if entry is None or entry[0] != TOPICS[name][0]:
                raise Violation(f"{name}: a replica lost its limits ({entry!r:.80})")
            if entry[1].get("drop_oldest", 0) != topic.dropped or entry[2] != topic.gaps:
                raise Violation(f"{name}: a replica counts {entry[1]} dropped and gaps "
                                f"{entry[2]}, the model {topic.dropped} and {topic.gaps}")
            record = (state.get("expiry") or {}).get("topic", {}).get(name)
            if (0 if record is None else record[2]) != topic.expired:
                raise Violation(f"{name}: a replica counts {record and record[2]} expired, "
                                f"the model {topic.expired}")
            headers = {o: dict(h) for o, h in
                       ((state.get("headers") or {}).get("topics", {}).get(name) or [])}
            want = {topic.base + i: e.headers for i, e in enumerate(topic.log) if e.headers}
            if headers != want:
                raise Violation(f"{name}: a replica keeps headers {headers!r:.100}, the "
                                f"model {want!r:.100}")


class TopicOptionsClient(Client):
    """Declares :data:`TOPICS` and subscribes to them, then publishes (a half with a TTL,
    headers and/or a msg_id), advances, collects and sweeps."""

    kind = "topic-options"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0
        self.last_id: str | None = None
        self.todo: list[tuple[int, list[Any]]] = []
        for name, (limits, age) in sorted(TOPICS.items()):
            self.todo.append((C.TOPIC_DECLARE_LIMITED, [name, limits]))
            if age is not None:
                self.todo.append((C.EXPIRY_RULES, [name, "topic", None, age]))
            self.todo.append((C.TOPIC_SUBSCRIBE, [name, cid, "durable"]))

    def next_op(self) -> None:
        if self.todo:  # declarations and subscriptions first, each until it succeeds
            self.call(*self.todo[0], self._declared)
            return
        if self.draining:
            self.stopped = True
            return
        name = self.rng.choice(sorted(TOPICS))
        roll = self.rng.random()
        if roll < 0.5:
            self.n += 1
            value = f"{self.cid}:{self.n}:" + "x" * self.rng.randrange(0, 12)
            options: dict[str, Any] = {}
            if self.rng.random() < 0.5:
                options["ttl_ms"] = self.rng.choice([5, 40, 150, 600, 5_000])
            if self.rng.random() < 0.3:
                options["headers"] = {"n": str(self.n)}
            if self.rng.random() < 0.35:  # sometimes the previous id again: a repeat
                reuse = self.last_id is not None and self.rng.random() < 0.5
                self.last_id = self.last_id if reuse else f"{self.cid}-{self.n}"
                options["msg_id"] = self.last_id
            if options:
                self.call(C.TOPIC_PUBLISH_OPTIONS, [name, options, value], _ignore)
            else:
                self.call(C.TOPIC_PUBLISH, [name, value], _ignore)
        elif roll < 0.85:
            self.call(C.TOPIC_ADVANCE, [name, self.cid], _ignore, polling=True)
        elif roll < 0.95:
            self.call(C.TOPIC_GC, [name], _ignore)
        else:
            self.call(C.EXPIRE, sweep_args(name, "topic", len(self.ops)), _ignore)

    def _declared(self, obs: Observed) -> None:
        if obs.outcome == OK and not isinstance(obs.result, OpError) and self.todo:
            self.todo.pop(0)

    @property
    def settled(self) -> bool:
        return not self.todo and super().settled


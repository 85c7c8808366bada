"""Topic clients of the simulated cluster: a publisher, durable and ephemeral subscribers
and a replayer that starts at and seeks to offsets.
"""

from __future__ import annotations

import random

from lazily_queue.replicated import ops as C

from .client import OK, TOPIC, Client, Host, Observed, UniqueSender


class Publisher(UniqueSender):
    """Publishes unique values to the topic."""

    kind = "publisher"
    code = C.TOPIC_PUBLISH
    target = TOPIC


class Subscriber(Client):
    """Subscribes (durable or ephemeral), then advances one element at a time or (a
    share ``batching`` of its reads) moves its cursor past a batch read locally, as a
    batching ``stream()`` does; sometimes goes offline (every second time a durable one
    goes, it deletes its subscription instead, and subscribes again at the tail)."""

    kind = "subscriber"

    def __init__(self, cid: str, cluster: Host, rng: random.Random, durable: bool) -> None:
        super().__init__(cid, cluster, rng)
        self.durable = durable
        self.kind = "durable" if durable else "ephemeral"
        self.connected = False
        self.idle = False
        self.batching = 0.0
        self.cursor: int | None = None
        self.leaves = 0

    def next_op(self) -> None:
        if not self.connected:
            mode = "durable" if self.durable else "ephemeral"
            self.call(C.TOPIC_SUBSCRIBE, [TOPIC, self.cid, mode], self._subscribed, polling=True)
            return
        if not self.draining and self.rng.random() < 0.03:
            self.leaves += 1
            code = (C.TOPIC_DELETE_SUBSCRIBER if self.durable and self.leaves % 2 == 0
                    else C.TOPIC_DISCONNECT)
            self.call(code, [TOPIC, self.cid], self._disconnected)
            return
        if self.batching and self.rng.random() < self.batching:
            # Offset 0 only reads the cursor; past it, a batch read locally is consumed.
            to = 0 if self.cursor is None else self.cursor + self.rng.randrange(1, 9)
            # Read-like (a drained run need not wait for it): at the tail it moves nothing.
            self.call(C.TOPIC_ADVANCE_TO, [TOPIC, self.cid, to], self._moved, timeout=5.0,
                      polling=True)
            return
        self.cursor = None
        self.call(C.TOPIC_ADVANCE, [TOPIC, self.cid], self._advanced, timeout=5.0,
                  orphan=lambda _o, _r: None, polling=True)

    def _moved(self, obs: Observed) -> None:
        self.cursor = obs.result if obs.outcome == OK and isinstance(obs.result, int) else None
        # Caught up: the move stopped short of the offset asked for.
        self.idle = obs.outcome == OK and isinstance(obs.result, int) and obs.result < obs.args[2]
        if obs.outcome != OK or obs.result is None:
            self.connected = False

    def _subscribed(self, obs: Observed) -> None:
        if obs.outcome == OK:
            self.connected = True

    def _disconnected(self, obs: Observed) -> None:
        self.connected = False

    def _advanced(self, obs: Observed) -> None:
        # Nothing to read, or an unknown outcome: subscribe again (a no-op when connected).
        self.idle = obs.outcome == OK and obs.result is None
        if obs.outcome != OK or obs.result is None:
            self.connected = False


class Replayer(Subscriber):
    """A durable subscriber that starts at the head, the tail or an offset (maybe out of
    the retained range: refused) and now and then seeks backward or forward."""

    kind = "replayer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng, durable=True)
        self.kind = "replayer"
        #: The highest offset seen (a guess of the tail, for offsets to start or seek at).
        self.seen = 0

    def next_op(self) -> None:
        if not self.connected:
            start = self.rng.choice(["head", "tail", self.rng.randrange(0, self.seen + 3)])
            self.call(C.TOPIC_SUBSCRIBE_AT, [TOPIC, self.cid, "durable", start],
                      self._subscribed_at, polling=True)
            return
        if not self.draining and self.rng.random() < 0.05:
            offset = self.rng.randrange(0, self.seen + 3)
            self.call(C.TOPIC_SEEK, [TOPIC, self.cid, offset], self._sought)
            return
        super().next_op()

    def _subscribed_at(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome == OK and isinstance(result, list):
            if result[0] == "ok":
                self.connected = True
            else:  # out of range: ["out_of_range", offset, base, end]
                self.seen = max(self.seen, int(result[3]))

    def _sought(self, obs: Observed) -> None:
        result = obs.result
        if obs.outcome != OK or not isinstance(result, list):
            return
        if result[0] == "ok" and result[1] is None:
            self.connected = False
        elif result[0] == "out_of_range":
            self.seen = max(self.seen, int(result[3]))

    def _advanced(self, obs: Observed) -> None:
        if obs.outcome == OK and isinstance(obs.result, str):
            self.seen += 1
        super()._advanced(obs)

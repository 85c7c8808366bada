"""A simulated client and what it saw: the :class:`Observed` record of each operation,
the :class:`Host` clients run on, the :class:`Client` base with at most one operation
in flight, and the two simplest clients (:class:`Declarer`, :class:`UniqueSender`).

An operation's outcome is a result, a clean failure (the operation was certainly not
applied) or an unknown outcome (timed out, or its member crashed).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from lazily_queue.raft.errors import CommitTimeout, NoQuorum, StorageUnavailable
from lazily_queue.raft.proposals import Proposal
from lazily_queue.replicated import ops as C

QUEUE, WORK, TOPIC = "q", "w", "t"
#: The consumer groups of the topic (the first starts at the head, the second at the tail).
GROUPS = ("g1", "g2")
OK, FAILED, UNKNOWN = "ok", "failed", "unknown"


@dataclass
class Observed:
    """One operation as its client saw it."""

    client: str
    node: str
    session: int
    seq: int
    code: int
    args: list[Any]
    issued: float
    outcome: str = ""
    result: Any = None
    polling: bool = False
    orphan_result: Any = None
    has_orphan_result: bool = False


class Host(Protocol):
    """Where clients run: the simulated cluster, or one real node process."""

    def member_ids(self) -> list[str]: ...

    def running(self, n: str) -> bool: ...

    def is_paused(self, n: str) -> bool: ...

    def now(self) -> float: ...

    def session_of(self, n: str) -> int: ...

    def propose(self, client: Client, n: str, code: int, args: list[Any], *, timeout: float,
                on_done: Callable[[Any, BaseException | None], None],
                on_orphan: Callable[[Any], None] | None) -> Proposal | None: ...

    def track(self, n: str, client: Client, obs: Observed, p: Proposal) -> None: ...

    def observed(self, obs: Observed) -> None:
        """``obs`` got its outcome (or a late result)."""

    def propose_detached(self, n: str, code: int, args: list[Any],
                         timeout: float = 3600.0) -> None: ...

    def resubmit_later(self, n: str, obs: Observed) -> None: ...


class Client:
    """A client with at most one operation in flight."""

    kind = "client"

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        self.cid = cid
        self.cluster = cluster
        self.rng = rng
        self.node = rng.choice(cluster.member_ids())
        self.busy = False
        self.stopped = False
        self.draining = False
        #: ``SESSION_REGISTER`` ops it asked for (:func:`.registered_sessions.register_args`).
        self.registers = 0
        #: Issues nothing for now (the drain waits for the last answers to arrive).
        self.quiet = False
        self.ops: list[Observed] = []
        self.current: Observed | None = None

    @property
    def settled(self) -> bool:
        """Idle, or only waiting for a read-like poll (pop, claim, advance)."""
        return not self.busy or (self.current is not None and self.current.polling)

    def act(self) -> None:
        """Issue the next operation when idle (called at random times)."""
        if self.busy or self.stopped or self.quiet or self.cluster.is_paused(self.node):
            return
        if not self.cluster.running(self.node):
            running = [n for n in self.cluster.member_ids() if self.cluster.running(n)]
            if not running:
                return
            self.node = self.rng.choice(running)
        self.next_op()

    def next_op(self) -> None:
        raise NotImplementedError

    def call(
        self,
        code: int,
        args: list[Any],
        then: Callable[[Observed], None],
        *,
        timeout: float = 3.0,
        orphan: Callable[[Observed, Any], None] | None = None,
        polling: bool = False,
    ) -> Observed | None:
        """Propose on the current member; ``then(observed)`` runs once the outcome is known."""
        obs: Observed | None = None
        proposal: Proposal | None = None

        def done(result: Any, error: BaseException | None) -> None:
            assert obs is not None and proposal is not None
            if error is None:
                obs.outcome, obs.result = OK, result
            else:
                obs.outcome = FAILED if _clean(proposal, error) else UNKNOWN
                obs.result = f"{type(error).__name__}"
            self.busy = False
            self.cluster.observed(obs)
            then(obs)

        def late(result: Any) -> None:
            assert obs is not None
            obs.orphan_result, obs.has_orphan_result = result, True
            self.cluster.observed(obs)
            if orphan is not None:
                orphan(obs, result)

        proposal = self.cluster.propose(self, self.node, code, args, timeout=timeout,
                                        on_done=done, on_orphan=late if orphan else None)
        if proposal is None:
            return None
        session = self.cluster.session_of(self.node)
        obs = Observed(self.cid, self.node, session, proposal.seq, code, list(args),
                       self.cluster.now(), polling=polling)
        self.current = obs
        self.cluster.track(self.node, self, obs, proposal)
        self.ops.append(obs)
        self.busy = True
        return obs

    def lost(self, obs: Observed) -> None:
        """The member running ``obs`` crashed before answering."""


def _clean(p: Proposal, error: BaseException) -> bool:
    if isinstance(error, CommitTimeout):
        return "it was not applied" in str(error)
    if isinstance(error, NoQuorum):
        return not p.maybe_applied and p.attempts == 0
    if isinstance(error, StorageUnavailable):
        return "was not applied" in str(error)
    return False


class Declarer(Client):
    """Declares the queue, the work queue and the topic (and, with ``groups``, the
    topic's consumer groups), retrying until each succeeded."""

    kind = "declarer"

    def __init__(self, cid: str, cluster: Host, rng: random.Random,
                 visibility_ms: int, max_deliveries: int,
                 queue_capacity: int | None = None, groups: bool = False) -> None:
        super().__init__(cid, cluster, rng)
        self.todo: list[tuple[int, list[Any]]] = [
            (C.QUEUE_DECLARE, [QUEUE, queue_capacity]),
            (C.WORK_DECLARE, [WORK, visibility_ms, max_deliveries]),
            (C.TOPIC_DECLARE, [TOPIC]),
        ]
        if groups:  # only with group members: older scenarios replay as they were
            self.todo += [
                (C.GROUP_DECLARE, [TOPIC, GROUPS[0], visibility_ms, max_deliveries, "head"]),
                (C.GROUP_DECLARE, [TOPIC, GROUPS[1], visibility_ms, max_deliveries, "tail"]),
            ]

    @property
    def settled(self) -> bool:
        return not self.todo

    def next_op(self) -> None:
        if self.todo:
            code, args = self.todo[0]
            self.call(code, args, self._done)

    def _done(self, obs: Observed) -> None:
        if obs.outcome == OK and obs.result in (None, ["ok", None]) and self.todo:
            self.todo.pop(0)


class UniqueSender(Client):
    """Sends ``code`` with a new unique value for ``target`` until draining."""

    code = 0
    target = ""

    def __init__(self, cid: str, cluster: Host, rng: random.Random) -> None:
        super().__init__(cid, cluster, rng)
        self.n = 0

    def next_op(self) -> None:
        if self.draining:
            self.stopped = True
            return
        self.n += 1
        self.call(self.code, [self.target, f"{self.cid}:{self.n}"], lambda _obs: None)

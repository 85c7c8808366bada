"""How a :class:`~lazily_queue.raft.replica.Replica` fails the callers waiting on its
proposals: at their deadline, once the quorum has been lost for longer than the grace
period, or all at once on demand."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import CommitTimeout, NoQuorum
from .prevote import LEADER

if TYPE_CHECKING:
    from .engine import RaftEngine
    from .fsm import FSM
    from .proposals import Proposal, ReplicaConfig
    from .ready import Completion, Ready
    from .silence import Silence


class ReplicaWaiters:
    """:class:`~lazily_queue.raft.replica.Replica`'s deadline and quorum-loss handling."""

    config: ReplicaConfig
    fsm: FSM
    engine: RaftEngine
    _ready: Ready
    _unresolved: dict[int, Proposal]
    _queued: list[Proposal]
    _quorum_lost_at: float | None
    #: The clock when this member last led (its start, before it ever did).
    _led_at: float
    clock: Callable[[], float]
    #: Which peers sent Raft frames when (set by the driver), to name silent members.
    silence: Silence | None = None

    def _fail(self, p: Proposal, error: BaseException) -> None:
        """Complete ``p`` with ``error`` (the replica's own)."""
        raise NotImplementedError

    def fail_waiters(
        self, error: Callable[[bool], BaseException]
    ) -> list[tuple[Completion, Any, BaseException | None]]:
        """Fail every waiting caller now and return their completions (to be called at
        once: they carry errors only). ``error(unknown)`` builds each exception, with
        ``unknown`` True when the operation may still commit (a pop stays an orphan)."""
        start = len(self._ready.completions)
        self._fail_waiting(error)
        failed = self._ready.completions[start:]
        del self._ready.completions[start:]
        return failed

    def _fail_waiting(self, error: Callable[[bool], BaseException]) -> None:
        for p in list(self._unresolved.values()):
            if p.on_done is None:
                continue
            if not (p.in_flight or p.maybe_applied):
                self._fail(p, error(False))
            elif p.on_orphan is not None:
                # It may have reached the leader: keep a pop alive so an element it took
                # still finds its way back.
                self._ready.completions.append((p.on_done, None, error(True)))
                p.on_done = None
            else:
                self._fail(p, error(True))

    def _expire(self, now: float) -> None:
        for p in list(self._unresolved.values()):
            if p.in_flight and now > p.attempt_deadline:
                # No answer for this attempt (a cut-off leader, a lost message): the
                # outcome is unknown; retry with the same sequence number.
                p.in_flight = False
                p.maybe_applied = True
                p.retry_at = now
                self._queued.append(p)
            if p.on_done is None or now <= p.deadline:
                continue
            if p.maybe_applied or p.in_flight:
                if p.on_orphan is not None:
                    self._ready.completions.append((p.on_done, None, self._timeout(p, True)))
                    p.on_done = None
                    continue
                self._fail(p, self._timeout(p, True))
            else:
                self._fail(p, self._timeout(p, False))

    def _timeout(self, p: Proposal, unknown: bool) -> BaseException:
        applied = None if unknown else False
        if not self._has_quorum():
            return NoQuorum(self._quorum_text(), applied=applied)
        cause = f" (last attempt: {p.last_failure})" if p.last_failure else ""
        outcome = "its outcome is unknown" if unknown else "it was not applied"
        silent = self._silent_members()
        return CommitTimeout(
            f"{self.fsm.op_name(p.code)} did not commit before its deadline; "
            f"{outcome}{cause}. Leader: {self.engine.leader_id or 'none'}, term "
            f"{self.engine.term}." + (f" Likely cause: {silent}." if silent else ""),
            applied=applied
        )

    @property
    def leader_window(self) -> float:
        """Seconds without a word from a leader after which it is likely gone: two
        election timeouts (or leader fallback timeouts, the longer)."""
        timing = self.config.engine
        return 2 * max(timing.election_timeout_max, timing.leader_fallback_timeout)

    def _silent_members(self) -> str | None:
        return None if self.silence is None else self.silence.cause(
            self.engine, self.leader_window)

    def majority_problem(self) -> str | None:
        """Why this member cannot count on a majority: the members it cannot reach, or
        those linked but silent (as a member whose disk refuses writes is); ``None`` when
        neither keeps a majority from answering."""
        return self._quorum_text() if not self._has_quorum() else self._silent_members()

    def quorum_lost(self) -> str | None:
        """Why this member has reached no majority for longer than ``no_quorum_grace``
        (the writes it fails meanwhile say the same); ``None`` while it reaches one."""
        lost = self._quorum_lost_at
        if (lost is None or self._has_quorum()
                or self.clock() - lost < self.config.no_quorum_grace):
            return None
        return self._quorum_text()

    def leaderless(self) -> str | None:
        """Why this member has had no leader for :attr:`leader_window`: it neither led
        nor heard a leader's AppendEntries for so long, as when a partition silently cut
        it from the majority, so it applies nothing the others commit; ``None``
        otherwise (and on a leader)."""
        engine = self.engine
        window = self.leader_window
        if (engine._SyncObj__raftState == LEADER or engine.pre_vote.heard_within(window)
                or self.clock() - self._led_at <= window):
            return None
        problem = (self.majority_problem() or "").removeprefix("no quorum: ")
        return (f"no quorum: node {engine.node_id} has heard from no leader for {window:g} s "
                f"or more (term {engine.term})" + (f"; {problem}" if problem else "")
                + "; it applies nothing the other members commit until it hears one")

    def _check_quorum(self, now: float) -> None:
        """Past the grace period without a majority (unreachable, or linked but silent
        while operations wait), fail every waiting operation with :class:`NoQuorum`."""
        silent = None
        if self._has_quorum():
            silent = self._silent_members() if self._unresolved else None
            if silent is None:
                self._quorum_lost_at = None
                return
        if self._quorum_lost_at is None:
            self._quorum_lost_at = now
            return
        if now - self._quorum_lost_at < self.config.no_quorum_grace:
            return
        text = (self._quorum_text() if silent is None else
                f"no quorum: {silent}; writes are refused until a majority answers again")
        self._fail_waiting(lambda unknown: NoQuorum(
            f"{text}; this operation may have committed before the quorum was lost, its "
            "outcome is unknown" if unknown else text, applied=None if unknown else False))

    def _has_quorum(self) -> bool:
        return self.engine._SyncObj__raftState == LEADER or bool(self.engine.hasQuorum)

    def _quorum_text(self) -> str:
        members, me = self.engine.members, self.engine.node_id
        linked = self.engine.connected & set(members)
        down = [m for m in members if m != me and m not in linked]
        need = len(members) // 2 + 1
        return (
            f"no quorum: node {me} reaches {1 + len(linked)} of {len(members)} "
            f"members ({', '.join(members)}) and {need} are needed; writes are refused "
            "until a majority is reachable again: start the unreachable ones "
            f"({', '.join(down)}) or mend the network to them"
        )

"""The simulated cluster: members, network, clients and faults on one virtual clock.

A discrete-event loop: at each instant it delivers the frames that are due, runs the
timers that are due (member ticks, fsync completions, client actions, faults) and
then steps every member that got input, until nothing more happens at that instant.
Everything random comes from one generator seeded by the run's seed.
"""

from __future__ import annotations

import functools
import hashlib
import heapq
import random
from collections import deque
from collections.abc import Callable
from typing import Any

from lazily_queue.core.queue import QueuePopError
from lazily_queue.maintenance import due_operations
from lazily_queue.raft.codec import FrameError, decode_frame
from lazily_queue.raft.proposals import Proposal
from lazily_queue.raft.ready import Ready
from lazily_queue.replicated.ops import op_name

from .client import Client, Observed
from .clock import VirtualClock
from .history import History, Violation
from .network import SimNetwork
from .node import SimNode
from .safety import SafetyChecks
from .scenario import Scenario
from .stability import LeaderStability

Completion = Callable[[Any, BaseException | None], None]

TICK = 0.02
MAINTENANCE = 0.2
TRACE_KEPT = 400


def _nothing() -> None:
    return None


def _empty(result: Any) -> bool:
    """A poll that found nothing (an empty pop or claim, nothing to read)."""
    return (result is None or result == [None, 0] or result == "AlreadyConnected"
            or isinstance(result, QueuePopError))


class Cluster(SafetyChecks):
    """N members of the real code, their network, their clients, one clock."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.rng = random.Random(scenario.seed)
        self.clock = VirtualClock()
        self.history = History()
        self.node_ids = [str(i + 1) for i in range(scenario.nodes)]
        self.trace_tail: deque[str] = deque(maxlen=TRACE_KEPT)
        self.trace_lines = 0
        self._trace_hash = hashlib.blake2b(digest_size=16)
        self.network = SimNetwork(self.node_ids, random.Random(self.rng.getrandbits(64)))
        self.network.faults = scenario.link_faults()
        self.network.on_peer = self._on_peer
        self.nodes = {
            n: SimNode(n, self.node_ids, clock=self.clock,
                       rng=random.Random(self.rng.getrandbits(64)), history=self.history,
                       config=scenario.replica_config(), fsync_latency=scenario.fsync_latency,
                       trace=self.trace, inline_fsync_below=scenario.inline_fsync_below)
            for n in self.node_ids
        }
        for n, node in self.nodes.items():
            node.before_inline_fsync = functools.partial(self._crash_if_armed, n)
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._timer_seq = 0
        self._dirty: set[str] = set()
        #: Per member, the proposals clients wait on, keyed by their completion callback
        #: itself (held here, so no other object takes its identity while it waits: a
        #: proposal whose caller went away has its ``on_done`` cleared by the replica).
        self._outstanding: dict[str, dict[Completion, tuple[Client, Observed, Proposal]]] = {
            n: {} for n in self.node_ids}
        self.leaders: dict[int, str] = {}
        self._commits: dict[tuple[str, int], int] = {}
        #: The highest entry a leader committed: (index, term, members at the time).
        self._kept: tuple[int, int, tuple[str, ...]] | None = None
        self.bad_frames = 0
        self.steps = 0
        #: Called with a member's id before each of its steps.
        self.step_hooks: list[Callable[[str], None]] = []
        self._paused: dict[str, list[tuple[str, bytes]]] = {}
        self._armed: dict[str, Callable[[], None]] = {}
        self.stability = LeaderStability(self)
        self.network.on_change = self.stability.sample
        for node in self.nodes.values():
            node.on_stall = self.stability.sample

    # -- tracing ----------------------------------------------------------------------------

    def trace(self, line: str) -> None:
        text = f"{self.clock.now:9.4f} {line}"
        self.trace_tail.append(text)
        self.trace_lines += 1
        self._trace_hash.update(text.encode())

    def digest(self) -> str:
        """A digest of the trace, the committed history and the traffic (same seed, same run)."""
        h = self._trace_hash.copy()
        for index in sorted(self.history.digests):
            h.update(f"{index}={self.history.digests[index]};".encode())
        h.update(f"{self.steps}/{self.network.sent}/{self.network.delivered}".encode())
        return h.hexdigest()

    # -- timers ----------------------------------------------------------------------------

    def at(self, when: float, fn: Callable[[], None]) -> None:
        self._timer_seq += 1
        heapq.heappush(self._timers, (max(when, self.clock.now), self._timer_seq, fn))

    def every(self, start: float, period: Callable[[], float], fn: Callable[[], None],
              until: float | None = None) -> None:
        def run() -> None:
            if until is not None and self.clock.now > until:
                return
            fn()
            self.at(self.clock.now + period(), run)

        self.at(start, run)

    def run_until(self, end: float, stop: Callable[[], bool] | None = None) -> bool:
        """Advance to ``end`` (or until ``stop()`` holds); True when stopped early."""
        while True:
            nxt = self._next_time()
            if nxt is None or nxt > end:
                self.clock.advance_to(max(self.clock.now, end))
                return False
            self.clock.advance_to(nxt)
            self.network.deliver_due(nxt, self._deliver)
            while self._timers and self._timers[0][0] <= nxt:
                _, _, fn = heapq.heappop(self._timers)
                fn()
            for n, node in self.nodes.items():
                if node.fsync_due is not None and node.fsync_due <= nxt and n not in self._paused:
                    node.finish_fsync(self._dispatch)
                    if node.replica is not None and node.replica.engine.is_leader:
                        self.wake(n)  # as the driver: its own copy now counts
            self._step_dirty()
            self.history.check()
            if stop is not None and stop():
                return True

    def _next_time(self) -> float | None:
        times = [t for t in (self.network.next_time(),) if t is not None]
        if self._timers:
            times.append(self._timers[0][0])
        times.extend(node.fsync_due for n, node in self.nodes.items()
                     if node.fsync_due is not None and n not in self._paused)
        return min(times) if times else None

    def _step_dirty(self) -> None:
        self._step_all_dirty()
        for n in sorted(self.nodes):  # nothing else is about to run on them
            if n not in self._paused:
                self.nodes[n].publish_commit(self._dispatch)
        self._step_all_dirty()

    def _step_all_dirty(self) -> None:
        rounds = 0
        while self._dirty:
            rounds += 1
            if rounds > 1000:
                raise Violation("members keep waking each other at one instant")
            for n in sorted(self._dirty):
                self._dirty.discard(n)
                if n not in self._paused:
                    self.step_now(n)

    def step_now(self, n: str) -> None:
        """Step ``n`` at once (a driver's step; see :meth:`idle`)."""
        for hook in self.step_hooks:
            hook(n)
        again = self.nodes[n].step(self._dispatch)
        self.steps += 1
        self._check_leader(n)
        self._check_kept()
        self.stability.stepped(n)
        if n in self._armed and self.nodes[n].fsync_due is not None:
            self._armed.pop(n)()
        if again:
            self.wake(n)  # as the driver: its own copy now counts

    def idle(self, n: str) -> bool:
        """The driver's ``_idle``: no step due, nothing held or unsynced, inline fsyncs."""
        node = self.nodes[n]
        return (n not in self._dirty and n not in self._paused and node.replica is not None
                and node.fsync_due is None and node.pipeline.idle and node.inline())

    def wake(self, node: str) -> None:
        self._dirty.add(node)

    # -- pauses (SIGSTOP / SIGCONT) ----------------------------------------------------------

    def is_paused(self, n: str) -> bool:
        return n in self._paused

    def pause(self, n: str) -> None:
        """Stop the member's process: its state stays, its input waits in the socket."""
        self._paused.setdefault(n, [])
        self.stability.sample()

    def resume(self, n: str) -> None:
        inbox = self._paused.pop(n, None)
        if inbox is None:
            return
        self.stability.sample()
        self.trace(f"{n}: resume ({len(inbox)} frames waiting)")
        for src, frame in inbox:
            self._deliver(src, n, frame)
        node = self.nodes[n]
        if node.fsync_due is not None and node.fsync_due <= self.clock.now:
            node.finish_fsync(self._dispatch)
        self.wake(n)

    # -- members ---------------------------------------------------------------------------

    def start_node(self, n: str) -> None:
        node = self.nodes[n]
        node.start()
        self.network.set_running(n, True)
        replica = node.replica
        assert replica is not None
        self.trace(f"{n}: start #{node.incarnation} session {replica.session:x} "
                   f"log {replica.journal.first_index}..{replica.journal.last_index}")
        self._tick(n, node.incarnation)

    def _tick(self, n: str, incarnation: int) -> None:
        node = self.nodes[n]
        if not node.running or node.incarnation != incarnation:
            return
        self.wake(n)
        self.at(self.clock.now + TICK * self.rng.uniform(0.9, 1.1),
                lambda: self._tick(n, incarnation))

    def crash_node(self, n: str) -> None:
        node = self.nodes[n]
        if not node.running:
            return
        node.crash()
        self._armed.pop(n, None)
        self._paused.pop(n, None)
        self.network.set_running(n, False)
        self._dirty.discard(n)
        lost = self._outstanding[n]
        self._outstanding[n] = {}
        for client, obs, _ in lost.values():
            obs.outcome = "unknown"
            obs.result = "crashed"
            client.busy = False
            client.lost(obs)

    def member_ids(self) -> list[str]:
        return self.node_ids

    def running(self, n: str) -> bool:
        return self.nodes[n].running

    def now(self) -> float:
        return self.clock.now

    def observed(self, obs: Observed) -> None:
        """Trace each client outcome (the records themselves stay with the clients)."""
        result = obs.orphan_result if obs.has_orphan_result else obs.result
        if obs.polling and obs.outcome == "ok" and _empty(result):
            return
        self.trace(f"{obs.node}: {obs.client} {op_name(obs.code)} seq {obs.seq} "
                   f"{'late' if obs.has_orphan_result else obs.outcome} {result!r:.60}")

    def _crash_if_armed(self, n: str) -> None:
        """``n`` is about to fsync inline: the crash armed for its next fsync happens now."""
        self._armed.pop(n, _nothing)()

    def crash_in_next_fsync(self, n: str, then: Callable[[], None]) -> None:
        """Call ``then`` (a crash) right after ``n`` next writes records, before their fsync."""
        self._armed[n] = then

    def session_of(self, n: str) -> int:
        replica = self.nodes[n].replica
        return 0 if replica is None else replica.session

    def leader(self) -> str | None:
        leaders = [n for n, node in self.nodes.items()
                   if node.replica is not None and node.replica.engine.is_leader]
        if not leaders:
            return None
        return max(leaders, key=lambda n: self._term(n))

    def _term(self, n: str) -> int:
        replica = self.nodes[n].replica
        return -1 if replica is None else replica.engine.term

    # -- messages --------------------------------------------------------------------------

    def _dispatch(self, node: SimNode, ready: Ready) -> None:
        for callback, result, error in ready.completions:
            self._outstanding[node.node_id].pop(callback, None)
            callback(result, error)
        for orphan, value in ready.orphans:
            orphan(value)
        for peer, messages in ready.messages.items():
            self.network.send(node.node_id, peer, messages, self.clock.now)

    def _deliver(self, src: str, dst: str, frame: bytes) -> None:
        node = self.nodes[dst]
        if not node.running:
            return
        inbox = self._paused.get(dst)
        if inbox is not None:
            inbox.append((src, frame))
            return
        try:
            messages = decode_frame(frame)
        except FrameError as exc:
            # As the driver does: a malformed frame closes that link (it reconnects).
            self.bad_frames += 1
            self.trace(f"{dst}: malformed frame from {src} ({str(exc)[:60]}); link closed")
            self.network.drop_link(src, dst)
            return
        node.receive(src, messages)
        self.wake(dst)

    def _on_peer(self, n: str, peer: str, up: bool) -> None:
        replica = self.nodes[n].replica
        if replica is not None:
            replica.peer_connected(peer, up)
            self.wake(n)

    # -- proposals -------------------------------------------------------------------------

    def propose(
        self,
        client: Client,
        n: str,
        code: int,
        args: list[Any],
        *,
        timeout: float,
        on_done: Callable[[Any, BaseException | None], None],
        on_orphan: Callable[[Any], None] | None,
    ) -> Proposal | None:
        replica = self.nodes[n].replica
        if replica is None or self.nodes[n].stalled:
            return None
        p = replica.propose(code, args, timeout=timeout, on_done=on_done, on_orphan=on_orphan)
        self.wake(n)
        return p

    def track(self, n: str, client: Client, obs: Observed, p: Proposal) -> None:
        if p.on_done is not None:
            self._outstanding[n][p.on_done] = (client, obs, p)

    def untrack(self, n: str, callback: Callable[[Any, BaseException | None], None]) -> None:
        """Forget what :meth:`track` noted for the proposal completing with ``callback``."""
        self._outstanding[n].pop(callback, None)

    def propose_detached(self, n: str, code: int, args: list[Any], timeout: float = 3600.0
                         ) -> None:
        """Propose with nobody waiting (an orphan's element going back, maintenance)."""
        replica = self.nodes[n].replica
        if replica is None or self.nodes[n].stalled:
            return
        replica.propose(code, args, timeout=timeout, on_done=lambda _r, _e: None,
                        on_orphan=lambda _r: None)
        self.wake(n)

    def resubmit_later(self, n: str, obs: Observed) -> None:
        """Submit the proposal of ``obs`` again, same sequence number, while it is in flight."""
        node = self.nodes[n]
        incarnation = node.incarnation

        def again() -> None:
            replica = node.replica
            if replica is None or node.incarnation != incarnation:
                return
            for p in list(replica._unresolved.values()):
                if p.seq == obs.seq and p.in_flight and not p.done:
                    p.in_flight = False
                    p.retry_at = 0.0
                    replica._queued.append(p)
                    self.trace(f"{n}: resubmit seq {p.seq}")
                    self.wake(n)

        self.at(self.clock.now + self.rng.uniform(0.001, 0.05), again)

    # -- leader maintenance ----------------------------------------------------------------

    def maintain(self, gc: bool) -> None:
        """On the leader: expire leases and collect topic retention (as Node does)."""
        n = self.leader()
        if n is None or n in self._paused:
            return
        node = self.nodes[n]
        assert node.view is not None
        for code, args in due_operations(node.view, int(node.wall() * 1000), gc_topics=gc):
            self.propose_detached(n, code, args, 1.0)

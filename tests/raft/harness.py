"""Replicas driven by hand on a virtual clock, with a queue of in-flight messages."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lazily_queue.raft.codec import decode_frame, encode_frames
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.engine import EngineConfig
from lazily_queue.raft.journal import DurableJournal
from lazily_queue.raft.proposals import ReplicaConfig
from lazily_queue.raft.ready import Ready
from lazily_queue.raft.rejoin import wipe_for_rejoin
from lazily_queue.raft.replica import Replica
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView

Message = tuple[str, str, dict[str, Any]]


def wiped_member(root: Path, node: str = "1") -> None:
    """Give ``node`` under ``root`` a journal of four entries of term 2, then wipe it for
    rejoining (its floor: term 2, index 4)."""
    disk = OsDisk(sync=False)
    directory = str(root / node)
    journal = DurableJournal(disk, directory)
    for i in range(1, 5):
        journal.add(b"\x00" + bytes([i]) * 8, i, 2)
    journal.setCurrentTerm(2, None)
    journal.sync()
    assert wipe_for_rejoin(disk, directory, directory + "/snapshot.cbor") == (2, 4)


class Manual:
    """A cluster stepped explicitly: nothing happens between calls."""

    def __init__(
        self,
        root: Path,
        ids: tuple[str, ...] = ("1", "2", "3"),
        *,
        seed: int = 1,
        config: ReplicaConfig | None = None,
    ) -> None:
        self.root = root
        self.ids = ids
        self.now = 0.0
        self.wall = 1_700_000_000.0
        self.disk = OsDisk(sync=False)
        self.config = config or ReplicaConfig(
            engine=EngineConfig(compaction_min_entries=10_000, compaction_min_time=3600)
        )
        self.seed = seed
        self.replicas: dict[str, Replica] = {}
        self.views: dict[str, ReadView] = {}
        self.in_flight: list[Message] = []
        self.sent: list[Message] = []
        self.results: list[tuple[Any, BaseException | None]] = []
        self.restart_all()

    def restart_all(self) -> None:
        """Start every member from its journal, all linked, nothing in flight."""
        for node in self.ids:
            self.start(node)
        for a in self.ids:
            for b in self.ids:
                if a != b:
                    self.replicas[a].peer_connected(b, True)
        self.in_flight = []

    def start(self, node: str) -> Replica:
        state_machine = StateMachine()
        replica = Replica(
            node,
            list(self.ids),
            journal=DurableJournal(self.disk, str(self.root / node)),
            snapshot_path=str(self.root / node / "snapshot.cbor"),
            fsm=state_machine,
            config=self.config,
            clock=lambda: self.now,
            wall_clock=lambda: self.wall,
            rng=random.Random(self.seed * 100 + int(node)),
        )
        self.replicas[node] = replica
        self.views[node] = ReadView(state_machine)
        return replica

    def step(self, node: str) -> None:
        replica = self.replicas[node]
        self._release(node, replica.step())
        if replica.commit_unsent:  # as a driver does once no other step is due
            self._release(node, replica.publish_commit())

    def _release(self, node: str, ready: Ready) -> None:
        for peer, messages in ready.messages.items():
            for frame in encode_frames(messages):
                for message in decode_frame(frame):
                    self.in_flight.append((node, peer, message))
                    self.sent.append((node, peer, message))
        for callback, result, error in ready.completions:
            callback(result, error)

    def step_all(self) -> None:
        for node in self.ids:
            self.step(node)

    def deliver(self, keep: Callable[[Message], bool] | None = None) -> int:
        """Deliver every queued message (except those ``keep`` holds back)."""
        queued, self.in_flight = self.in_flight, []
        delivered = 0
        for item in queued:
            if keep is not None and keep(item):
                self.in_flight.append(item)
                continue
            src, dst, message = item
            self.replicas[dst].receive(src, message)
            delivered += 1
        return delivered

    def round(self, keep: Callable[[Message], bool] | None = None) -> None:
        self.step_all()
        self.deliver(keep)

    def elect(self, max_rounds: int = 400) -> str:
        for _ in range(max_rounds):
            leaders = [n for n, r in self.replicas.items() if r.engine.is_leader]
            if leaders:
                for _ in range(5):
                    self.round()
                return leaders[0]
            self.now += 0.05
            self.round()
        raise AssertionError("no leader elected")

    def propose(self, node: str, code: int, args: list[Any], timeout: float = 30.0) -> None:
        self.replicas[node].propose(
            code, args, timeout=timeout, on_done=lambda r, e: self.results.append((r, e))
        )

    def declare_queue(self, node: str, name: str = "q") -> None:
        self.propose(node, C.QUEUE_DECLARE, [name, None])
        for _ in range(10):
            self.round()

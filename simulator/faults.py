"""Applying a scenario's fault schedule to the simulated cluster (see :mod:`.scenario`)."""

from __future__ import annotations

import functools
import random
from typing import Any

from lazily_queue.raft.meta import MetaStore
from lazily_queue.raft.records import SECTOR, decode_records
from lazily_queue.raft.rejoin import floor_of

from .cluster import Cluster
from .history import Violation
from .hostile import hostile_frame
from .membership import Reconfiguration


class Faults:
    """Applies faults when they are due; knows which member was damaged or isolated."""

    def __init__(self, cluster: Cluster, rng: random.Random) -> None:
        self.cluster = cluster
        self.rng = rng
        self._corrupted: dict[str, int] = {}
        self.stopped = False
        self._isolated: str | None = None
        self.membership = Reconfiguration(cluster)

    def _amnesiac(self) -> bool:
        """Whether a member was wiped and has not caught up to its floor yet."""
        for node in self.cluster.nodes.values():
            if node.replica is not None:
                if node.replica.engine.rejoining:
                    return True
                continue
            try:
                meta = MetaStore(node.disk, f"{node.dir}/journal.meta").load()
            except Exception:
                return True
            if floor_of(meta) is not None:
                return True
        return False

    def schedule(self, faults: list[dict[str, Any]]) -> None:
        for fault in faults:
            self.cluster.at(float(fault["at"]), functools.partial(self._apply, fault))

    def _resolve(self, node: str) -> str | None:
        if node == "leader":
            return self.cluster.leader()
        return node

    def _apply(self, fault: dict[str, Any]) -> None:
        c = self.cluster
        kind = fault["fault"]
        down = float(fault.get("down", 0.0))
        if kind == "corrupt" and (self.membership.state != "idle" or self._amnesiac()):
            # Losing a member's data while another is out, or has not caught up since it
            # lost its own, exceeds what the cluster tolerates: it may stay unavailable
            # (safely) until an operator acts.
            return
        if kind in ("crash", "corrupt"):
            n = self._resolve(fault["node"])
            if n is None or not c.nodes[n].running:
                return
            c.trace(f"fault {kind} {n} for {down}s")
            c.crash_node(n)
            if kind == "corrupt":
                self._corrupt(n, fault["how"], float(fault["pick"]))
                c.nodes[n].damaged_on_purpose = n in self._corrupted
                c.nodes[n].lost_data |= n in self._corrupted
            c.at(c.clock.now + down, functools.partial(self.restart, n, fault))
        elif kind == "power":
            c.trace(f"fault power loss for {down}s")
            for n in c.node_ids:
                c.crash_node(n)
                c.at(c.clock.now + down, functools.partial(self.restart, n, {}))
        elif kind == "pause":
            n = self._resolve(fault["node"])
            if n is None or not c.nodes[n].running or c.is_paused(n):
                return
            c.trace(f"fault pause {n} for {down}s")
            c.pause(n)
            c.at(c.clock.now + down, functools.partial(c.resume, n))
        elif kind == "partition":
            if "isolate" in fault:
                leader = c.leader()
                if leader is None:
                    return
                groups = [[leader], [n for n in c.node_ids if n != leader]]
                self._isolated = leader
            else:
                groups = fault["groups"]
            c.trace(f"fault partition {groups} for {down}s")
            c.network.partition(*groups)
            c.at(c.clock.now + down, functools.partial(self._heal, fault))
        elif kind == "one_way":
            src, dst = self._resolve(fault["src"]), self._resolve(fault["dst"])
            if src is None or dst is None or src == dst:
                return
            c.trace(f"fault one-way {src}>{dst} for {down}s")
            c.network.cut_one_way(src, dst)
            c.at(c.clock.now + down, self._heal)
        elif kind == "clock":
            n = self._resolve(fault["node"])
            if n is None:
                return
            c.trace(f"fault clock {n} {fault['seconds']:+}s")
            c.nodes[n].wall.jump(float(fault["seconds"]))
        elif kind == "reconfigure":
            leader = c.leader()
            choices = [n for n in c.node_ids if n != leader and c.nodes[n].running]
            if choices:
                member = choices[int(float(fault["pick"]) * len(choices)) % len(choices)]
                self.membership.start(member, down)
        elif kind == "disk_full":
            n = self._resolve(fault["node"])
            if n is None or c.nodes[n].disk.full:
                return
            c.trace(f"fault disk full on {n} for {down}s")
            c.nodes[n].disk.fill(self.rng)
            c.at(c.clock.now + down, functools.partial(self._free_disk, n))
        elif kind == "fsync_error":
            n = self._resolve(fault["node"])
            if n is None:
                return
            c.trace(f"fault {fault['count']} fsync errors (EIO) on {n}")
            c.nodes[n].disk.fail_fsyncs(int(fault["count"]), self.rng)
        elif kind == "hostile":
            src, dst = self._resolve(fault["src"]), self._resolve(fault["dst"])
            if src is None or dst is None or src == dst:
                return
            name, frame = hostile_frame(self.rng)
            c.trace(f"fault hostile frame {src}>{dst}: {name} ({len(frame)} bytes)")
            c.network.send_raw(src, dst, frame, c.clock.now)
        elif kind == "transfer":
            n = c.leader()
            replica = None if n is None else c.nodes[n].replica
            if replica is None or c.is_paused(str(n)):
                return
            c.trace(f"fault leadership transfer from {n}")
            replica.engine.transfer_leadership(None, lambda _r, _e: None)
            c.wake(str(n))

    def _heal(self, fault: dict[str, Any] | None = None) -> None:
        self.cluster.trace("heal network")
        self.cluster.network.heal()
        self._then_crash(fault or {})

    def _free_disk(self, n: str) -> None:
        self.cluster.trace(f"disk of {n} has room again")
        self.cluster.nodes[n].disk.free()

    def restart(self, n: str, fault: dict[str, Any]) -> None:
        node = self.cluster.nodes[n]
        if node.running or n == self.membership.held_out:
            return
        detected = node.corruptions_detected
        try:
            self.cluster.start_node(n)
        except OSError as exc:
            # As a node process exits when its disk refuses the start; restarted later.
            self.cluster.trace(f"{n}: cannot start ({exc.strerror}); retried in 0.3s")
            self.cluster.at(self.cluster.clock.now + 0.3,
                            functools.partial(self.restart, n, fault))
            return
        index = self._corrupted.pop(n, None)
        if index is not None and node.corruptions_detected == detected:
            what = {-1: "snapshot", -2: "metadata copy"}.get(index, f"journal record {index}")
            raise Violation(f"{n}: the damaged {what} was not detected")
        self._then_crash(fault)

    def _then_crash(self, fault: dict[str, Any]) -> None:
        """Crash ``then_crash`` shortly after a heal or restart (while it catches up)."""
        n = fault.get("then_crash")
        if n is None or self.stopped:
            return
        c = self.cluster
        down = float(fault.get("down", 0.5))

        if n == "isolated":
            n = self._isolated
            if n is None:
                return
        target: str = n

        def crash() -> None:
            if c.nodes[target].running and not self.stopped:
                c.trace(f"fault crash {target} while catching up, for {down}s")
                c.crash_node(target)
                c.at(c.clock.now + down, functools.partial(self.restart, target, {}))

        if fault.get("in_fsync"):
            c.crash_in_next_fsync(target, crash)
        else:
            c.at(c.clock.now + float(fault["after"]), crash)

    def _corrupt(self, n: str, how: str, pick: float) -> None:
        """Flip a bit of, or cut a hole in, a durable record that has records after it.

        ``last`` damages the last record (it is cut off and the member withholds its
        vote until it has caught up past it); ``meta`` one of the two metadata copies.
        """
        node = self.cluster.nodes[n]
        if how == "snapshot":
            self._corrupt_snapshot(n, pick)
            return
        if how == "meta":
            self._corrupt_meta(n, pick)
            return
        path = f"{node.dir}/journal.log"
        data = node.disk.read(path) or b""
        entries, offsets, valid = decode_records(data)
        if len(entries) < 3:
            return
        if how == "last":
            i = len(entries) - 1
            start, end = offsets[i], valid
            at = self.rng.randrange(start, end)
            node.disk.flip_bit(path, at, self.rng.randrange(8))
            if torn_lookalike(data, at, end):
                # A write torn at that boundary leaves the same bytes: the journal cuts it
                # as torn (so does etcd's WAL), which it must not be expected to detect.
                self.cluster.trace(f"{n}: flipped a bit of the last record {entries[i][1]}, "
                                   "zeros from a sector boundary after it: a torn write")
                return
            self.cluster.trace(f"{n}: flipped a bit of the last record {entries[i][1]}")
            self._corrupted[n] = entries[i][1]
            return
        i = min(int(pick * (len(entries) - 1)), len(entries) - 2)
        start, end = offsets[i], offsets[i + 1]
        index = entries[i][1]
        if how == "flip":
            node.disk.flip_bit(path, self.rng.randrange(start, end), self.rng.randrange(8))
            self.cluster.trace(f"{n}: flipped a bit of record {index} ({i + 1} of "
                               f"{len(entries)})")
        else:
            cut = self.rng.randrange(start + 1, end)
            node.disk.punch(path, cut, end)
            self.cluster.trace(f"{n}: record {index} lost its last {end - cut} bytes "
                               f"({i + 1} of {len(entries)})")
        self._corrupted[n] = index

    def _corrupt_meta(self, n: str, pick: float) -> None:
        node = self.cluster.nodes[n]
        path = MetaStore(node.disk, f"{node.dir}/journal.meta").paths[int(pick * 2) % 2]
        size = node.disk.durable_size(path)
        if not size:
            return
        offset = self.rng.randrange(size)
        node.disk.flip_bit(path, offset, self.rng.randrange(8))
        self._corrupted[n] = -2
        self.cluster.trace(f"{n}: flipped a bit of {path.rsplit('/', 1)[-1]} at byte {offset}")

    def _corrupt_snapshot(self, n: str, pick: float) -> None:
        node = self.cluster.nodes[n]
        path = f"{node.dir}/snapshot.cbor"
        size = node.disk.durable_size(path)
        if not size:
            return
        offset = min(int(pick * size), size - 1)
        node.disk.flip_bit(path, offset, self.rng.randrange(8))
        self._corrupted[n] = -1
        self.cluster.trace(f"{n}: flipped a bit of the snapshot at byte {offset} of {size}")


def torn_lookalike(data: bytes, at: int, end: int) -> bool:
    """Whether a record ending at ``end`` with byte ``at`` damaged looks like a write torn
    at a sector boundary: its bytes from some boundary after ``at`` to its end are zeros."""
    boundary = (at // SECTOR + 1) * SECTOR
    while boundary < end:
        if not data[boundary:end].strip(b"\x00"):
            return True
        boundary += SECTOR
    return False

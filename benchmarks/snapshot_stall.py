"""The longest event-loop stall while a member takes a snapshot of a large state.

Builds a state machine holding ``--elements`` queued elements spread over several queues,
topics and work queues, then takes ``--rounds`` snapshots through :class:`SnapshotStore`
on a real disk while a ticker task records the gaps between its turns (the loop stall).
Prints the cost of each stage taken alone (capture, encode, write, and for comparison
a capture that also copies the values, which the snapshot does not do: it copies
containers on the loop and encodes them on the writer's thread, where work-queue
records and client-session results are made too; the values are never changed),
the longest gap per snapshot (the capture, on the loop: the encoding and the write run
on the worker thread, in short pieces that hand the interpreter lock back to the loop),
the p50/p90/p99 of every loop turn while snapshots were taken and, last, a ``--json``
line. Run it under the same load to compare.

    python benchmarks/snapshot_stall.py [--elements 100000] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import statistics
import tempfile
import time
from typing import Any

from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.snapshot import FAILED, SUCCESS, SnapshotStore, encode_snapshot
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import StateMachine


def build_state(elements: int) -> StateMachine:
    """Elements split half into 4 queues, a quarter into 2 topics, a quarter into 2
    work queues; payloads are small dicts like the client benchmark pushes."""
    sm = StateMachine()
    for q in range(4):
        sm.apply_plain(ops.QUEUE_DECLARE, [f"q{q}", None])
    for t in range(2):
        sm.apply_plain(ops.TOPIC_DECLARE, [f"t{t}"])
        sm.apply_plain(ops.TOPIC_SUBSCRIBE, [f"t{t}", f"sub{t}", "durable"])
    for w in range(2):
        sm.apply_plain(ops.WORK_DECLARE, [f"w{w}", 30_000, 5])
    for i in range(elements):
        value = {"n": i, "body": f"payload-{i:08d}", "tags": ["a", "b"]}
        kind = i % 8
        if kind < 4:
            sm.apply_plain(ops.QUEUE_PUSH, [f"q{kind}", value])
        elif kind < 6:
            sm.apply_plain(ops.TOPIC_PUBLISH, [f"t{kind - 4}", value])
        else:
            sm.apply_plain(ops.WORK_PUSH, [f"w{kind - 6}", value])
    return sm


def _anchors(index: int) -> tuple[Any, Any, Any, Any]:
    return (None, (b"y", index + 1, 1), (b"x", index, 1), ["a", "b", "c"])


async def _stall_run(store: SnapshotStore, rounds: int) -> tuple[list[float], list[float]]:
    """Take ``rounds`` snapshots, each as the engine does (serialize, then poll
    checkSerializing every loop turn); the longest ticker gap of each, and every gap
    seen while they were taken."""
    gaps: list[float] = []
    turns: list[float] = []
    worst = 0.0
    stop = recording = False

    async def ticker() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0)
            now = time.perf_counter()
            worst = max(worst, now - last)
            if recording:
                turns.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    for r in range(rounds):
        worst = 0.0
        recording = True
        store.serialize(_anchors(10 * r + 1), 10 * r + 2)
        state = await _taken(store)
        recording = False
        assert state == SUCCESS, state
        await asyncio.sleep(0.005)
        gaps.append(worst)
    stop = True
    await task
    return gaps, turns


async def _taken(store: SnapshotStore) -> int:
    """Poll as the engine's ticks do (every millisecond here) until the snapshot ended."""
    for _ in range(1_000_000):
        state = store.checkSerializing()[0]
        if state in (SUCCESS, FAILED):
            return state
        await asyncio.sleep(0.001)
    raise RuntimeError("the snapshot never ended")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--inline", action="store_true",
                        help="write on the loop's thread (the simulator's mode)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sm = build_state(args.elements)
    with tempfile.TemporaryDirectory() as tmp:
        disk = OsDisk()
        store = SnapshotStore(disk, f"{tmp}/snapshot.cbor",
                              capture=lambda: sm.capture(deferred=True),
                              prepare=sm.prepare, install=sm.install)
        if hasattr(store, "writer"):
            store.writer.background = not args.inline
        t0 = time.perf_counter()
        state = sm.capture(deferred=True)  # as a member does: records made when encoded
        t1 = time.perf_counter()
        raw = encode_snapshot({"format": 1, "state": state, "last": [b"x", 1, 1],
                               "prev": [b"y", 0, 1], "members": ["a"]})
        t2 = time.perf_counter()
        disk.replace(f"{tmp}/probe.cbor", raw)
        t3 = time.perf_counter()
        # What a capture that also copied the values would cost (a pickle round trip):
        # the snapshot does without, as the values are never changed in place.
        pickle.loads(pickle.dumps(sm.capture(), protocol=5))
        t4 = time.perf_counter()
        gaps, turns = asyncio.run(_stall_run(store, args.rounds))
        turns.sort()
        close = getattr(store, "close", None)
        if close is not None:
            close()
    figures = {
        "elements": args.elements,
        "snapshot_bytes": len(raw),
        "capture_ms": round((t1 - t0) * 1000, 1),
        "encode_ms": round((t2 - t1) * 1000, 1),
        "write_ms": round((t3 - t2) * 1000, 1),
        "copied_capture_ms": round((t4 - t3) * 1000, 1),
        "threaded": _threaded(store),
        "stall_max_ms": round(max(gaps) * 1000, 1),
        "stall_median_ms": round(statistics.median(gaps) * 1000, 1),
        "turn_p50_ms": round(turns[len(turns) // 2] * 1000, 2),
        "turn_p90_ms": round(turns[int(len(turns) * 0.9)] * 1000, 2),
        "turn_p99_ms": round(turns[int(len(turns) * 0.99)] * 1000, 2),
    }
    for key, value in figures.items():
        print(f"{key:>16}: {value}")
    if args.json:
        print(json.dumps(figures))


def _threaded(store: SnapshotStore) -> bool:
    writer = getattr(store, "writer", None)
    return bool(writer is not None and writer.background)


if __name__ == "__main__":
    main()

"""Snapshot encoding off the event loop: the state is captured when the snapshot is
taken and encoded where the file is written (the worker thread for the driver, the
caller's thread for the simulator), in short pieces that give the same bytes as one
encoding."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from lazily_queue.raft import snapshot as snapshot_module
from lazily_queue.raft import snapshot_pieces, values
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.snapshot import (
    FAILED,
    SERIALIZING,
    SUCCESS,
    SnapshotError,
    SnapshotStore,
    decode_snapshot,
    encode_snapshot,
)
from lazily_queue.raft.snapshot_pieces import PIECE_ITEMS, encode_pieces
from lazily_queue.raft.snapshot_writer import LockYield

GUARD = 20.0


def _anchors(index: int) -> tuple[Any, Any, Any, Any]:
    return (None, (b"b", index + 1, 1), (b"a", index, 1), ["1"])


def _store(path: Path, state: list[Any], **kw: Any) -> SnapshotStore:
    return SnapshotStore(OsDisk(sync=False), str(path), capture=lambda: {"items": list(state)},
                         install=lambda _: None, prepare=lambda _: None, **kw)


async def _until(condition: Any) -> None:
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def test_the_state_is_encoded_on_the_worker_as_it_was_when_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    threads: list[threading.Thread] = []
    pauses: list[Any] = []
    encode = snapshot_module.encode_snapshot

    def gated(doc: dict[str, Any], pause: Any = None) -> bytes:
        threads.append(threading.current_thread())
        pauses.append(pause)
        assert gate.wait(GUARD), "the test never opened the gate"
        return encode(doc, pause)

    monkeypatch.setattr(snapshot_module, "encode_snapshot", gated)
    state = [1, 2, 3]
    store = _store(tmp_path / "snap", state)
    store.writer.background = True
    try:
        store.serialize(_anchors(3), 4)
        await _until(lambda: bool(threads))
        state.append(4)  # the state machine goes on while the worker encodes
        assert store.checkSerializing() == (SERIALIZING, 4)
        gate.set()
        await _until(lambda: store.checkSerializing() != (SERIALIZING, 4))
        assert threads == [threads[0]] and threads[0] is not threading.current_thread()
        assert [type(p) for p in pauses] == [LockYield]  # it hands the lock back to the loop
        doc = store.read()
        assert doc is not None and doc["state"] == {"items": [1, 2, 3]}
    finally:
        gate.set()
        store.close()


def test_without_a_worker_the_encoding_runs_on_the_callers_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    pauses: list[Any] = []
    encode = snapshot_module.encode_snapshot

    def recorded(doc: dict[str, Any], pause: Any = None) -> bytes:
        threads.append(threading.current_thread())
        pauses.append(pause)
        return encode(doc, pause)

    monkeypatch.setattr(snapshot_module, "encode_snapshot", recorded)
    state = ["a"]
    store = _store(tmp_path / "snap", state)
    store.writer.delay_polls = 2
    store.serialize(_anchors(1), 2)
    assert threads == []  # encoded with its delayed write, at the last poll
    state.append("b")
    assert store.checkSerializing() == (SERIALIZING, 2)
    assert store.checkSerializing() == (SUCCESS, 2)
    assert threads == [threading.current_thread()] and pauses == [None]
    doc = store.read()
    assert doc is not None and doc["state"] == {"items": ["a"]}


async def test_a_snapshot_encoded_over_the_limit_fails_and_leaves_the_file(
        tmp_path: Path) -> None:
    state = [b"x" * 100]
    store = _store(tmp_path / "snap", state, max_bytes=4096)
    store.writer.background = True
    try:
        store.serialize(_anchors(1), 2)
        await _until(lambda: store.checkSerializing() != (SERIALIZING, 2))
        first = (tmp_path / "snap").read_bytes()
        state.append(b"y" * 8192)
        outcomes: list[Any] = []
        for index in (6, 8):  # each is tried, and fails
            store.serialize(_anchors(index - 1), index)
            await _until(lambda: outcomes.append(store.checkSerializing())  # type: ignore[func-returns-value]
                         or outcomes[-1][0] != SERIALIZING)
        assert outcomes[-1] == (FAILED, 8) and (FAILED, 6) in outcomes
        assert (tmp_path / "snap").read_bytes() == first
        assert store.capture_failures == 0 and store.taken == 1
    finally:
        store.close()


def _nested(n: int) -> Any:
    return {
        "queues": {f"q{i}": [None, False, [{"n": k, "body": f"p{k}", "t": ("a", k)}
                                           for k in range(n)]] for i in range(3)},
        "big_map": {f"k{k}": [k, (k, "x")] for k in range(n)},
        "tuple": tuple(range(n)),
        "deep": [[[list(range(n))]]],
        "small": [1, "two", b"three", 4.5, None, True, (1, 2)],
        "empty": [[], {}, ()],
    }


def test_pieces_give_the_bytes_of_one_encoding_in_short_calls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    value = _nested(3 * PIECE_ITEMS)
    whole = values.dumps(value)
    largest = 0
    dumps = values.dumps

    def measured(item: Any, **kw: Any) -> bytes:
        nonlocal largest
        largest = max(largest, snapshot_pieces._weight(item, 10**9))
        return dumps(item, **kw)

    monkeypatch.setattr(snapshot_pieces.values, "dumps", measured)
    pieces = encode_pieces(value)
    assert b"".join(pieces) == whole
    assert len(pieces) > 10 and largest <= PIECE_ITEMS
    for small in ([], {}, (), 7, "s", [1, (2, 3)], {"a": (1,)}):
        assert b"".join(encode_pieces(small)) == dumps(small)


def test_a_snapshot_file_reads_back_what_was_captured(tmp_path: Path) -> None:
    state = [_nested(PIECE_ITEMS + 7)]
    store = _store(tmp_path / "snap", state)
    store.serialize(_anchors(2), 3)
    assert store.checkSerializing() == (SUCCESS, 3)
    doc = decode_snapshot((tmp_path / "snap").read_bytes())
    assert doc["state"] == {"items": state}


async def test_a_checksummed_snapshot_without_its_state_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """A file of another version or written by hand: damaged data, not a KeyError."""
    from lazily_queue.node import Node
    from lazily_queue.raft.network import LocalHub

    raw = encode_snapshot({"format": 1, "last": (b"x", 2, 1), "prev": (b"x", 1, 1),
                           "members": ["1"]})
    with pytest.raises(SnapshotError, match="state"):
        decode_snapshot(raw)
    first = Node(1, data_dir=tmp_path, network=LocalHub().network("1"), durability="none")
    await first.start()  # the directory's metadata, as a node that has run leaves it
    await first.stop()
    (tmp_path / "raft" / "snapshot.cbor").write_bytes(raw)
    node = Node(1, data_dir=tmp_path, network=LocalHub().network("1"), durability="none")
    with pytest.raises(SnapshotError, match="lazily-queue rejoin"):
        await node.start()


def test_the_encoder_pauses_between_runs_and_gives_the_same_bytes() -> None:
    """Every few hundred items the encoder calls its pause (where a worker thread hands
    the interpreter lock back to the event loop), and the bytes do not change."""
    value = _nested(3 * PIECE_ITEMS)
    marks: list[int] = []
    out: list[bytes] = []
    pieces = encode_pieces(value, out, pause=lambda: marks.append(len(out)))
    assert b"".join(pieces) == values.dumps(value)
    assert len(marks) > 10
    steps = [b - a for a, b in zip([0, *marks], [*marks, len(out)], strict=True)]
    assert max(steps) <= 2 * PIECE_ITEMS  # never a long stretch without a pause
    doc = {"format": 1, "state": value, "last": [b"b", 2, 1], "prev": [b"a", 1, 1],
           "members": ["1"]}
    calls: list[None] = []
    raw = encode_snapshot(doc, lambda: calls.append(None))
    assert raw == encode_snapshot(doc) and calls
    assert decode_snapshot(raw)["state"] == value  # the checksum of the pieces holds


def test_weighing_a_large_container_stops_at_the_cap() -> None:
    """Deciding whether a container is encoded in one piece costs no more than the cap:
    a list of a million lists is not walked (it was, on the loop's lock, for every
    large container of every snapshot)."""
    import tracemalloc

    big = [[k] for k in range(1_000_000)]
    tracemalloc.start()
    try:
        weight = snapshot_pieces._weight([big], PIECE_ITEMS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert weight > PIECE_ITEMS
    assert peak < 64 * 1024, f"weighing allocated {peak} bytes"
    assert snapshot_pieces._weight([[1, 2], {"a": [3]}], 100) == 7


def test_a_lock_yield_sleeps_once_its_work_slice_has_passed() -> None:
    now = [0.0]
    slept: list[float] = []
    pause = LockYield(0.001, 0.00002, clock=lambda: now[0], sleep=slept.append)
    for t in (0.0002, 0.0009):
        now[0] = t
        pause()
    assert slept == []
    now[0] = 0.0011
    pause()
    assert slept == [0.00002] and pause.sleeps == 1
    now[0] = 0.0015
    pause()  # a new slice began at the sleep
    assert pause.sleeps == 1
    now[0] = 0.0022
    pause()
    assert pause.sleeps == 2

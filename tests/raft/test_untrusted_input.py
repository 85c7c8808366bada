"""Everything a peer or a file hands the replicated layer is decoded with bounded cost.

Raft frames, committed commands, snapshots (from disk and from a leader) and journal
metadata go through the profiles of ``lazily_transports.safe_cbor``; a value no replica would
decode is refused at the proposing call with ``UnsupportedValue``.
"""

from __future__ import annotations

import datetime
import logging
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lazily_transports.safe_cbor import VALUES

from lazily_queue import UnsupportedValue, testing
from lazily_queue.core.fifo import Fifo
from lazily_queue.raft import values
from lazily_queue.raft.batch import (
    CommandError,
    decode_command,
    encode_checked_op,
    encode_command,
)
from lazily_queue.raft.codec import FrameError, decode_frame
from lazily_queue.raft.disk import OsDisk
from lazily_queue.raft.engine import MAX_COMMAND_BYTES
from lazily_queue.raft.journal import DurableJournal, JournalError
from lazily_queue.raft.rejoin import wipe_for_rejoin
from lazily_queue.raft.snapshot import (
    MAGIC,
    SnapshotError,
    SnapshotStore,
    decode_snapshot,
    encode_snapshot,
)
from lazily_queue.replicated import ops as C

from .harness import Manual


def shared_dag(depth: int) -> bytes:
    """Lists sharing their halves, encoded with shared references (~6 bytes a level)."""
    node: list[Any] = ["x"]
    for _ in range(depth):
        node = [node, node]
    return cbor2.dumps(node, value_sharing=True)


def as_map_key(item: bytes) -> bytes:
    return b"\xa1" + item + b"\x01"


#: (encoded item, text the refusal must contain): bombs and items outside the profiles.
HOSTILE = [
    (as_map_key(shared_dag(5)), "tag 28"),
    (as_map_key(shared_dag(64)), "depth"),
    (cbor2.dumps(["abcdef"] * 3, string_referencing=True), "tag 25"),
    (b"\x81" * 10_000 + b"\x00", "depth"),
    (b"\x9b" + (2**63).to_bytes(8, "big"), "premature end"),
    (b"\x5a\xff\xff\xff\xff", "premature end"),
    (b"\xb9\x13\x88" + b"".join(cbor2.dumps(k * (2**61 - 1)) + b"\x00" for k in range(5000)),
     "map key"),
    (cbor2.dumps(cbor2.CBORTag(12345, 1)), "unknown tag 12345"),
    (b"\x9f\x01\xff", "indefinite"),
]
HOSTILE_IDS = ["dag-key", "deep-dag-key", "string-refs", "deep", "len-2^63", "len-2^32",
               "colliding-int-keys", "unknown-tag", "indefinite"]


# -- Raft frames --------------------------------------------------------------------------------


@pytest.mark.parametrize(("item", "cause"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_frames_are_refused_naming_the_cause(item: bytes, cause: str) -> None:
    for frame in (item, b"\x81" + item):
        with pytest.raises(FrameError, match="not valid CBOR") as info:
            decode_frame(frame)
        assert cause in str(info.value)


def test_frame_tags_are_refused() -> None:
    message = {"type": "response_vote", "term": cbor2.CBORTag(2, b"\x01" * 9)}
    with pytest.raises(FrameError, match="tag 2"):
        decode_frame(cbor2.dumps([message]))


@pytest.mark.parametrize(
    "message",
    [
        {"type": "x" * 1_000_000},
        {"type": "response_vote", "term": "y" * 1_000_000},
        {"type": "response_vote", "term": 1, "z" * 1_000_000: 1},
        {"type": "append_entries", "term": 1, "commit_index": 1, "prevLogIdx": 1,
         "prevLogTerm": 1, "entries": [[b"b" * 1_000_000, "i" * 1_000_000]]},
    ],
    ids=["type", "term", "field", "entry"],
)
def test_frame_errors_describe_peer_data_briefly(message: dict[str, Any]) -> None:
    with pytest.raises(FrameError) as info:
        decode_frame(cbor2.dumps([message]))
    assert len(str(info.value)) < 300


@settings(max_examples=200)
@given(st.binary(max_size=400))
def test_frame_decoder_raises_only_frame_errors(data: bytes) -> None:
    try:
        decode_frame(data)
    except FrameError:
        pass


# -- committed commands -------------------------------------------------------------------------


@pytest.mark.parametrize(("item", "cause"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_commands_are_refused_naming_the_cause(item: bytes, cause: str) -> None:
    for payload in (item, b"\x84\x01\x01\x00\x81\x84\x01\x02\x61q" + item):
        with pytest.raises(CommandError, match="not valid CBOR") as info:
            decode_command(payload)
        assert cause in str(info.value)


def test_commands_refuse_values_outside_the_values_profile() -> None:
    for value, cause in ((Fraction(1, 3), "tag 30"), ({1: "a"}, "map key"), ({1, 2}, "set")):
        with pytest.raises(CommandError, match=cause):
            decode_command(encode_command(1, 0, [[1, C.QUEUE_PUSH, "q", value]]))
    when = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    ops = [[1, C.QUEUE_PUSH, "q", [when, 2**100, {"k": b"v"}, frozenset({"s"})]]]
    assert decode_command(encode_command(1, 0, ops)) == (1, 0, ops)


_ops = st.lists(
    st.tuples(st.integers(0, 2**32), st.sampled_from([C.QUEUE_PUSH, C.WORK_PUSH]),
              st.text(max_size=4), st.binary(max_size=8) | st.integers() | st.text(max_size=8)),
    max_size=4,
)


@settings(max_examples=300)
@given(_ops, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6))
def test_mutated_commands_only_raise_command_errors(
    ops: list[tuple[Any, ...]], edits: list[tuple[int, int]]
) -> None:
    data = bytearray(encode_command(1, 0, [list(op) for op in ops]))
    for where, byte in edits:
        data[where % len(data)] = byte
    try:
        decode_command(bytes(data))
    except CommandError:
        pass


@settings(max_examples=300)
@given(st.binary(max_size=300), st.booleans())
def test_arbitrary_snapshot_bytes_only_raise_snapshot_errors(data: bytes, framed: bool) -> None:
    try:
        decode_snapshot(_file(data) if framed else data)
    except SnapshotError:
        pass


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_snapshots_only_raise_snapshot_errors(edits: list[tuple[int, int]]) -> None:
    body = bytearray(cbor2.dumps(_snapshot_doc({"queues": {"q": [None, False, [1, "a"]]}})))
    for where, byte in edits:
        body[where % len(body)] = byte
    try:
        decode_snapshot(_file(bytes(body)))
    except SnapshotError:
        pass


def test_command_errors_describe_peer_data_briefly() -> None:
    with pytest.raises(CommandError) as info:
        decode_command(cbor2.dumps([1, 1, 0, ["x" * 1_000_000]]))
    assert len(str(info.value)) < 200


# -- snapshots ----------------------------------------------------------------------------------


def _snapshot_doc(state: Any = None) -> dict[str, Any]:
    return {"format": 1, "state": state if state is not None else {"q": [1]},
            "last": [b"", 5, 1], "prev": [b"", 4, 1], "members": ["1", "2"]}


def _file(body: bytes) -> bytes:
    return MAGIC + (zlib.crc32(body) & 0xFFFFFFFF).to_bytes(4, "little") + body


@pytest.mark.parametrize(("item", "cause"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_snapshots_are_refused_naming_the_cause(item: bytes, cause: str) -> None:
    for data in (_file(item), item):
        with pytest.raises(SnapshotError, match="not valid CBOR") as info:
            decode_snapshot(data)
        assert cause in str(info.value)


def test_a_snapshot_truncated_inside_its_header_is_refused() -> None:
    for size in range(len(MAGIC), len(MAGIC) + 4):
        with pytest.raises(SnapshotError, match="truncated inside its header"):
            decode_snapshot(_file(b"")[:size])


def test_snapshot_entry_errors_describe_data_briefly() -> None:
    doc = _snapshot_doc()
    doc["last"] = ["x" * 1_000_000]
    with pytest.raises(SnapshotError) as info:
        decode_snapshot(encode_snapshot(doc))
    assert len(str(info.value)) < 200


def _store(tmp_path: Path, *, state: Any = None, **kwargs: Any) -> SnapshotStore:
    return SnapshotStore(OsDisk(sync=False), str(tmp_path / "snapshot.cbor"),
                         capture=lambda: state, install=lambda _: None,
                         prepare=lambda _: None, **kwargs)


def test_an_oversized_snapshot_transmission_is_refused_then_a_valid_one_installs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path, max_bytes=1000)
    assert store.setTransmissionData((b"x" * 600, True, False)) is False
    assert store.setTransmissionData((b"x" * 600, False, False)) is False
    assert "exceeds the 1000-byte snapshot limit" in caplog.text
    # The rest of that transmission is dropped, not appended to anything.
    assert store.setTransmissionData((b"x" * 10, False, True)) is False
    raw = encode_snapshot(_snapshot_doc())
    assert store.setTransmissionData((raw[:20], True, False)) is False
    assert store.setTransmissionData((raw[20:], False, True)) is True
    assert store.installed == 1
    doc = store.read()
    assert doc is not None and doc["last"] == (b"", 5, 1)


def test_a_hostile_snapshot_from_the_leader_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path)
    assert store.setTransmissionData((_file(as_map_key(shared_dag(5))), True, True)) is False
    assert "refused a snapshot from the leader" in caplog.text and "tag 28" in caplog.text
    assert store.installed == 0 and store.read() is None


def test_snapshots_over_the_limit_are_neither_taken_nor_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _store(tmp_path, max_bytes=100, state="s" * 200)
    store.serialize((None, (b"", 5, 1), (b"", 4, 1), ["1"]), 1)
    assert store.checkSerializing()[0] == 3  # FAILED: the log is kept
    assert "snapshot limit" in caplog.text
    assert not (tmp_path / "snapshot.cbor").exists()
    (tmp_path / "snapshot.cbor").write_bytes(encode_snapshot(_snapshot_doc("s" * 200)))
    with pytest.raises(SnapshotError, match="exceeds the 100-byte snapshot limit"):
        _store(tmp_path, max_bytes=100).read()
    assert _store(tmp_path).read() is not None


# -- journal metadata and rejoin ----------------------------------------------------------------


@pytest.mark.parametrize(("item", "cause"), HOSTILE, ids=HOSTILE_IDS)
def test_hostile_journal_metadata_is_refused_naming_the_cause(
    tmp_path: Path, item: bytes, cause: str
) -> None:
    (tmp_path / "journal.meta").write_bytes(item)
    with pytest.raises(JournalError, match=r"metadata .* damaged") as info:
        DurableJournal(OsDisk(sync=False), str(tmp_path))
    assert cause in str(info.value)


def test_journal_metadata_errors_describe_it_briefly(tmp_path: Path) -> None:
    (tmp_path / "journal.meta").write_bytes(cbor2.dumps(["m" * 60_000]))
    with pytest.raises(JournalError, match="unknown metadata format") as info:
        DurableJournal(OsDisk(sync=False), str(tmp_path))
    assert len(str(info.value)) < 400
    (tmp_path / "journal.meta").write_bytes(cbor2.dumps({"m" * 70_000: 1}))
    with pytest.raises(JournalError, match="byte limit"):
        DurableJournal(OsDisk(sync=False), str(tmp_path))


def test_rejoin_ignores_hostile_metadata(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "journal.meta").write_bytes(as_map_key(shared_dag(5)))
    floor = wipe_for_rejoin(OsDisk(sync=False), str(tmp_path), str(tmp_path / "snap"))
    assert floor == (0, 0)
    assert "unreadable metadata (" in caplog.text and "tag 28" in caplog.text
    assert DurableJournal(OsDisk(sync=False), str(tmp_path)).getCurrentTerm() == 0


# -- the producer side --------------------------------------------------------------------------


class _Custom:
    pass


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "cause"),
    [
        ({1: "a"}, "dict key 1 is not a str or bytes"),
        ({(1, 2): "a"}, "dict key tuple of 2 items is not a str or bytes"),
        ({1, 2}, "set element 1 is not a str or bytes"),
        (Fraction(1, 3), "fractions.Fraction is not a replicated type"),
        (1 + 2j, "builtins.complex is not a replicated type"),
        (_Custom(), "_Custom is not a replicated type"),
        (datetime.datetime(2024, 1, 1), "naive datetime"),
        (2**5000, "bignum"),
        (_nested(100), "nesting too deep"),
        (_nested(10_000), "nesting too deep"),
        ("a\ud800b", "surrogates not allowed"),
    ],
    ids=["int-key", "tuple-key", "int-set", "fraction", "complex", "object", "naive-datetime",
         "huge-int", "nested-100", "nested-10000", "lone-surrogate"],
)
def test_unsupported_values_are_refused_at_the_call(
    tmp_path: Path, value: Any, cause: str
) -> None:
    m = Manual(tmp_path)
    leader = m.elect()
    m.declare_queue(leader)
    replica = m.replicas[leader]
    refused = "queue_push: the value cannot be replicated"
    with pytest.raises(UnsupportedValue, match=refused) as info:
        m.propose(leader, C.QUEUE_PUSH, ["q", value])
    assert cause in str(info.value)
    assert isinstance(info.value, TypeError)
    assert replica.pending == 0
    m.propose(leader, C.QUEUE_PUSH, ["q", "fine"])
    for _ in range(10):
        m.round()
    for view in m.views.values():
        assert view.queues["q"].elements() == ["fine"]
        assert view.applied_ops == 3  # the leader's first op, the declaration, the valid push


def test_plain_scalars_at_the_edges_replicate_as_they_are(tmp_path: Path) -> None:
    """Scalars skip the scan (ints up to 64 bits); the next int up takes the tagged path;
    every replica gets equal values of the same types."""
    values = [2**64 - 1, -(2**64), 2**64, -(2**64) - 1, 1.5, True, None, b"b", "s", ""]
    m = Manual(tmp_path)
    leader = m.elect()
    m.declare_queue(leader)
    for value in values:
        m.propose(leader, C.QUEUE_PUSH, ["q", value])
    for _ in range(10):
        m.round()
    for view in m.views.values():
        got = view.queues["q"].elements()
        assert got == values
        assert [type(v) for v in got] == [type(v) for v in values]


def test_rows_of_plain_values_skip_the_scan_and_anything_else_is_scanned() -> None:
    """A client's grouped ops (rows of plain values) need no scan; a tuple, a nested list,
    a dict or too many items in a row send the op through the scan (tuples tagged,
    refusals named)."""
    rows = [7, 0, [1, C.QUEUE_PUSH, "q", b"x"], [2, C.QUEUE_PUSH, "q", -(2**64)]]
    assert values.plain_rows(rows, max_items=100)
    for odd in ([1, C.QUEUE_PUSH, "q", (1, 2)], [1, C.QUEUE_PUSH, "q", [1]],
                [1, C.QUEUE_PUSH, "q", {"k": 1}], [1, C.QUEUE_PUSH, "q", 2**64]):
        assert not values.plain_rows([7, 0, odd], max_items=100), odd
    assert not values.plain_rows([7, 0, [0] * 99], max_items=100)
    encoded = encode_checked_op(1, C.CLIENT_OPS, [7, 0, [1, C.QUEUE_PUSH, "q", (1, 2)]],
                                max_bytes=1000, name="client_ops")
    assert VALUES.loads(encoded, max_bytes=1000)[4][3] == (1, 2)


def test_oversized_operations_still_raise_value_error(tmp_path: Path) -> None:
    m = Manual(tmp_path)
    leader = m.elect()
    with pytest.raises(ValueError, match="byte limit of this cluster"):
        m.propose(leader, C.QUEUE_PUSH, ["q", b"x" * MAX_COMMAND_BYTES])
    with pytest.raises(ValueError, match="replicated command limit"):
        m.propose(leader, C.QUEUE_PUSH, ["q", [0] * (MAX_COMMAND_BYTES + 1)])


def test_the_deepest_accepted_value_survives_a_snapshot(tmp_path: Path) -> None:
    m = Manual(tmp_path)
    leader = m.elect()
    m.declare_queue(leader)
    depth = 1
    while True:
        try:
            m.propose(leader, C.QUEUE_PUSH, ["q", {"k": _nested(depth + 1)}])
        except UnsupportedValue:
            break
        depth += 1
    assert depth >= 40, "values may nest at least 40 levels"
    m.propose(leader, C.QUEUE_POP, ["q"])  # its result, stored per session, nests deeper
    for _ in range(20):
        m.round()
    view = m.views[leader]
    assert view.queues["q"].len() == depth - 2
    doc = _snapshot_doc(view.capture())
    restored = decode_snapshot(encode_snapshot(doc))
    assert restored["state"] == cbor2.loads(cbor2.dumps(doc["state"]))


async def test_a_node_refuses_an_unsupported_push_and_keeps_serving(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path) as cluster:
        node = (await cluster.followers())[0]
        q = node.queue("jobs")
        with pytest.raises(UnsupportedValue, match="dict key 1 is not a str or bytes"):
            await q.push({1: "one"})
        await q.push({"1": "one"})
        assert await q.pop() == {"1": "one"}


def test_hostile_commits_are_skipped_as_malformed(caplog: pytest.LogCaptureFixture) -> None:
    from lazily_queue.replicated.state_machine import StateMachine

    caplog.set_level(logging.ERROR)
    sm = StateMachine()
    result = sm.apply(b"\x84\x01\x01\x00\x81" + as_map_key(shared_dag(5)), 1)
    assert getattr(result, "code", None) == "malformed_command"
    assert "tag 28" in caplog.text


def test_a_bounded_queue_over_capacity_from_returned_elements_restores() -> None:
    """Elements given back to the head may take a bounded queue past its capacity; its
    snapshot must restore as it is."""
    from lazily_queue.replicated.state_machine import StateMachine

    sm = StateMachine()
    sm.restore(sm.capture())
    sm.queues["q"] = Fifo(2)
    sm.queues["q"].try_push("a")
    sm.queues["q"].try_push("b")
    for v in ("y", "x"):
        sm.queues["q"].push_front(v)
    restored = StateMachine()
    restored.restore(sm.capture())
    q = restored.queues["q"]
    assert (q.len(), q.capacity(), q.try_pop()) == (4, 2, "x")


async def test_a_node_whose_stored_snapshot_does_not_restore_refuses_to_start(
    tmp_path: Path,
) -> None:
    async with testing.cluster(data_dir=tmp_path, size=1) as cluster:
        node = cluster.node(1)
        await node.queue("q").push(1)
    path = tmp_path / "1" / "raft" / "snapshot.cbor"
    path.write_bytes(encode_snapshot(_snapshot_doc({"format": 99})))
    cluster = testing.Cluster(data_dir=tmp_path, size=1)
    with pytest.raises(SnapshotError, match=r"does not restore.*lazily-queue rejoin"):
        await cluster.start()
    await cluster.close()

"""PySyncObj's pickles: real log entries load, anything else is refused before unpickling."""

from __future__ import annotations

import io
import pickle
import re
from pathlib import Path
from typing import Any

import pysyncobj.pickle as ps_pickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazily_queue.raft import entries, patches
from lazily_queue.raft.engine import LEGACY_COMMAND_BYTES
from lazily_queue.raft.safe_pickle import (
    MAX_PICKLE_BYTES,
    MAX_PICKLE_DEPTH,
    MAX_PICKLE_OPCODES,
    UnsafePickleError,
    restricted_load,
    restricted_loads,
)
from lazily_queue.replicated import ops as C

from .harness import Manual

patches.install()


def _memo_dag(depth: int) -> bytes:
    """Opcodes building t = ("x",), then depth times t = (t, t) through memo fetches."""
    out = bytearray(b"\x80\x04\x8c\x01x\x85\x94")  # PROTO 4, "x", TUPLE1, MEMOIZE -> 0
    for index in range(depth):
        out += b"h" + bytes([index]) + b"h" + bytes([index]) + b"\x86\x94"  # BINGET x2, TUPLE2
    return bytes(out)


def hash_bomb(depth: int, container: str) -> bytes:
    """A pickle of plain values whose loading hashes a 2**depth tuple DAG."""
    dag = _memo_dag(depth)
    if container == "dict":
        return dag + b"}" + b"h" + bytes([depth]) + b"K\x01s" + b"."  # {dag: 1}
    if container == "frozenset":
        return dag[:2] + b"(" + dag[2:] + b"\x91."  # MARK ... FROZENSET
    if container == "set":
        return dag + b"\x8f(h" + bytes([depth]) + b"\x90."  # EMPTY_SET, ADDITEMS
    return dag + b"."


@pytest.mark.parametrize("container", ["dict", "frozenset", "set", "tuple"])
def test_hash_bomb_pickles_are_refused(container: str) -> None:
    for depth in (3, 40):
        with pytest.raises(UnsafePickleError, match=r"BINGET at byte \d+ is not allowed: a memo"):
            ps_pickle.loads(hash_bomb(depth, container))


def test_the_hash_bomb_builder_builds_what_it_says() -> None:
    value = pickle.loads(hash_bomb(3, "dict"))
    ((key, one),) = value.items()
    assert one == 1 and key[0] is key[1] and key[0][0] is key[0][1]
    assert key in pickle.loads(hash_bomb(3, "frozenset"))
    assert pickle.loads(hash_bomb(3, "set")) == {key}


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ({"k": "v"}, "a dict"),
        ({1, 2}, "a set|set$"),
        (frozenset({1}), "a set|frozenset$"),
        (print, "a global"),
        (Path("/"), "a global"),
        (bytearray(b"x"), "not allowed"),
        (1 + 2j, "a global"),
    ],
    ids=["dict", "set", "frozenset", "global", "object", "bytearray", "complex"],
)
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_anything_but_plain_values_is_refused(value: Any, refused: str, protocol: int) -> None:
    with pytest.raises(UnsafePickleError) as info:
        restricted_loads(pickle.dumps(value, protocol))
    assert re.search(refused, str(info.value).split(";")[0])


def test_shared_objects_are_refused_even_without_hashing() -> None:
    shared = ["x"]
    with pytest.raises(UnsafePickleError, match="memo reference"):
        restricted_loads(pickle.dumps([shared, shared], 4))


def test_nesting_size_and_opcode_count_are_bounded() -> None:
    deep: Any = 1
    for _ in range(MAX_PICKLE_DEPTH):
        deep = (deep,)
    assert restricted_loads(pickle.dumps(deep, 4)) == deep
    with pytest.raises(UnsafePickleError, match="nesting deeper"):
        restricted_loads(pickle.dumps((deep,), 4))
    with pytest.raises(UnsafePickleError, match="nesting deeper"):
        restricted_loads(b"\x80\x04" + b"]" * 20 + b"a" * 19 + b".")
    with pytest.raises(UnsafePickleError, match="opcodes"):
        restricted_loads(pickle.dumps(list(range(100)), 4))
    with pytest.raises(UnsafePickleError, match="byte limit"):
        restricted_loads(pickle.dumps(b"x" * MAX_PICKLE_BYTES, 4))


@pytest.mark.parametrize(
    ("data", "refused"),
    [
        (b"", "without a STOP"),
        (b"K\x01", "without a STOP"),
        (b"K\x01.extra", "does not end exactly one value"),
        (b"K\x01K\x02.", "does not end exactly one value"),
        (b"C\xff", "runs past the end"),
        (b"B\xff\xff\xff\xff", "runs past the end"),
        (b"\x86.", "lacks items"),
        (b"K\x01a.", "does not extend a list"),
        (b"(K\x01e.", "does not extend a list"),
        (b"t.", "has no MARK"),
        (b"I1\n.", "INT"),
        (b"\x8c\x01\xff.", "malformed pickle"),
    ],
)
def test_malformed_pickles_are_refused(data: bytes, refused: str) -> None:
    with pytest.raises(UnsafePickleError, match=refused):
        restricted_loads(data)


def test_every_entry_shape_pysyncobj_writes_loads() -> None:
    largest = (7, (b"x" * LEGACY_COMMAND_BYTES, 1_712_345_678_901))
    assert len(patches.safe_dumps(largest)) <= MAX_PICKLE_BYTES
    for value in (
        largest,
        (7, (b"payload", None)),
        (7, (b"", 0)),
        ["add", "4"],
        ["rem", "node-" + "x" * 300],
        0,
        2**40,
        7,
    ):
        data = patches.safe_dumps(value)
        assert ps_pickle.loads(data) == value
        assert ps_pickle.load(io.BytesIO(data)) == value
        assert restricted_load(io.BytesIO(data)) == value


def test_the_entries_of_a_real_cluster_load(tmp_path: Path) -> None:
    m = Manual(tmp_path)
    leader = m.elect()
    m.declare_queue(leader)
    for i in range(5):
        m.propose(leader, C.QUEUE_PUSH, ["q", i])
    for _ in range(10):
        m.round()
    kinds = set()
    for entry in m.replicas[leader].journal[:]:
        kind = entry[0][0]
        kinds.add(kind)
        if kind in (0, 2, 3):  # regular, membership, version: what PySyncObj unpickles
            restricted_loads(entry[0][1:])
    # Commands are our own entries (raft/entries.py), never pickled; no-ops are one byte.
    assert entries.COMMAND in kinds and 0 not in kinds
    assert restricted_loads(patches.safe_dumps(["add", "4"])) == ["add", "4"]  # membership


_plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.binary(max_size=20) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple),
    max_leaves=10,
)


@settings(max_examples=300)
@given(_plain, st.sampled_from([2, 3, 4, 5]))
def test_plain_values_load_or_are_refused_for_a_named_reason(value: Any, protocol: int) -> None:
    data = pickle.dumps(value, protocol)
    try:
        loaded = restricted_loads(data)
    except UnsafePickleError:
        return
    assert loaded == value


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_unsafe_pickle_error(data: bytes) -> None:
    try:
        restricted_loads(data)
    except UnsafePickleError:
        pass


def test_opcode_limit_leaves_room_for_real_entries() -> None:
    import pickletools

    ops = len(list(pickletools.genops(patches.safe_dumps((7, (b"p", 1_712_345_678_901))))))
    assert ops * 4 <= MAX_PICKLE_OPCODES

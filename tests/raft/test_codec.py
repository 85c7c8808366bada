"""The Raft wire codec: every message type round-trips; anything malformed is refused."""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazily_queue.raft import codec
from lazily_queue.raft.codec import MAX_FRAME_BYTES, FrameError, decode_frame, encode_frames

VALID: list[dict[str, Any]] = [
    {"type": "request_vote", "term": 3, "last_log_index": 10, "last_log_term": 2},
    {"type": "response_vote", "term": 3},
    {"type": "append_entries", "term": 3, "commit_index": 9, "prevLogIdx": 8,
     "prevLogTerm": 2, "entries": [(b"cmd", 9, 3)]},
    {"type": "append_entries", "term": 3, "commit_index": 9, "serialized": (b"chunk", True, False)},
    {"type": "append_entries", "term": 3, "commit_index": 9, "serialized": None},
    {"type": "next_node_idx", "next_node_idx": 10, "reset": False, "success": True},
    {"type": "apply_command", "command": b"\x00data", "request_id": 7},
    {"type": "apply_command_response", "request_id": 7, "log_idx": 12, "log_term": 3},
    {"type": "apply_command_response", "request_id": 7, "error": 2},
    {"type": "timeout_now", "term": 3},
]


def test_round_trip() -> None:
    frames = encode_frames(VALID)
    assert len(frames) == 1
    assert decode_frame(frames[0]) == VALID


def test_large_batches_split_into_frames() -> None:
    big = {"type": "apply_command", "command": b"x" * (MAX_FRAME_BYTES // 3)}
    frames = encode_frames([big] * 5)
    assert len(frames) >= 2
    assert sum(len(decode_frame(f)) for f in frames) == 5


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"type": "request_vote", "term": 1, "last_log_index": 1}, "lacks field"),
        ({"type": "request_vote", "term": -1, "last_log_index": 1, "last_log_term": 1},
         "int in 0..2"),
        ({"type": "request_vote", "term": True, "last_log_index": 1, "last_log_term": 1},
         "int in 0..2"),
        ({"type": "request_vote", "term": 2**63, "last_log_index": 1, "last_log_term": 1},
         "int in 0..2"),
        ({"type": "response_vote", "term": 1, "extra": 1}, "unexpected field"),
        ({"type": "launch_missiles"}, "unknown message type"),
        ({"type": "append_entries", "term": 1, "commit_index": 1, "prevLogIdx": 1},
         "both prevLogIdx"),
        ({"type": "append_entries", "term": 1, "commit_index": 1, "prevLogIdx": 1,
          "prevLogTerm": 1, "entries": [[b"x", 1]]}, "malformed log entry"),
        ({"type": "append_entries", "term": 1, "commit_index": 1,
          "transmission": "start", "data": b""}, "unexpected field"),
        ({"type": "apply_command", "command": "not bytes"}, "must be bytes"),
        ({"type": "next_node_idx", "next_node_idx": 1, "reset": 0, "success": True},
         "must be a bool"),
    ],
)
def test_malformed_messages(message: dict[str, Any], error: str) -> None:
    with pytest.raises(FrameError, match=error):
        decode_frame(cbor2.dumps([message]))


@pytest.mark.parametrize("frame", [b"", b"\xff", cbor2.dumps({"type": "x"}), cbor2.dumps([1])])
def test_malformed_frames(frame: bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(frame)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_bytes(data: bytes) -> None:
    try:
        messages = decode_frame(data)
    except FrameError:
        return
    assert isinstance(messages, list)


_value = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**40) | st.binary(max_size=8)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                               max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(
    st.sampled_from(["type", "term", "entries", "commit_index", "prevLogIdx", "prevLogTerm",
                     "command", "request_id", "success", "reset", "next_node_idx"]),
    _value | st.sampled_from(["append_entries", "request_vote", "next_node_idx"]),
), max_size=3))
def test_fuzz_structured(messages: list[dict[str, Any]]) -> None:
    try:
        decoded = decode_frame(cbor2.dumps(messages))
    except FrameError:
        return
    for m in decoded:  # whatever passes has exactly the shape the engine expects
        assert m["type"] in {"append_entries", "request_vote", "next_node_idx"}


_ROUND = {"type": "append_entries", "term": 3, "commit_index": 9, "prevLogIdx": 8,
          "prevLogTerm": 2, "entries": [[b"cmd", 9, 3]]}
_ANSWER = {"type": "next_node_idx", "next_node_idx": 10, "reset": False, "success": True}


def _walked(message: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the general walk alone makes of ``message`` (the round shapes' check off)."""
    with monkeypatch.context() as m:
        m.setattr(codec, "_round_message", lambda message: False)
        try:
            return codec.check_message(message)
        except FrameError as exc:
            return FrameError, str(exc)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([_ROUND, _ANSWER]),
       st.sampled_from(sorted(set(_ROUND) | set(_ANSWER))),
       _value | st.lists(st.lists(_value, max_size=4), max_size=3))
def test_round_messages_are_judged_as_the_general_walk_judges_them(
    shape: dict[str, Any], field: str, value: Any,
) -> None:
    """The two messages of every round are checked on a quicker path, which accepts
    only what the general walk accepts and hands back the same message."""
    message = {**shape, field: value}
    with pytest.MonkeyPatch.context() as monkeypatch:
        expected = _walked(cbor2.loads(cbor2.dumps(message)), monkeypatch)
    try:
        found = codec.check_message(cbor2.loads(cbor2.dumps(message)))
    except FrameError as exc:
        found = FrameError, str(exc)
    assert found == expected


@pytest.mark.parametrize("message", [
    {**_ROUND, "term": -1}, {**_ROUND, "prevLogTerm": True},
    {**_ROUND, "entries": [[b"x", False, 1]]}, {**_ROUND, "entries": [["x", 1, 1]]},
    {**_ROUND, "entries": (b"x", 1, 1)}, {**_ROUND, "type": "request_vote"},
    {**_ANSWER, "next_node_idx": 2**63}, {**_ANSWER, "success": 1},
    {**_ANSWER, "type": "append_entries"},
])
def test_malformed_round_messages_are_refused(message: dict[str, Any]) -> None:
    with pytest.raises(FrameError):
        decode_frame(cbor2.dumps([message]))


def test_round_messages_decode_with_entries_as_tuples() -> None:
    assert decode_frame(cbor2.dumps([_ROUND, _ANSWER])) == [
        {**_ROUND, "entries": [(b"cmd", 9, 3)]}, _ANSWER]


@pytest.mark.parametrize("message", VALID)
def test_a_single_message_is_one_frame_holding_a_one_element_array(
    message: dict[str, Any],
) -> None:
    assert encode_frames([message]) == [cbor2.dumps([message])]
    assert encode_frames([message, message]) == [cbor2.dumps([message, message])]

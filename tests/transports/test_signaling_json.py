"""Signaling frames' JSON is bounded in size, nesting and integer digits before it is used."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lazily_transports.webrtc.signaling import SignalingFrameError, loads
from lazily_transports.webrtc.signaling._frames import MAX_DEPTH, MAX_FRAME_BYTES, MAX_INT_DIGITS


def _nest(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@pytest.mark.parametrize("opener", ["[", '{"k":'])
def test_nesting_is_bounded(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    ok = opener * MAX_DEPTH + "1" + closer * MAX_DEPTH
    assert _depth(loads(ok)) == MAX_DEPTH
    deep = opener * (MAX_DEPTH + 1) + "1" + closer * (MAX_DEPTH + 1)
    with pytest.raises(SignalingFrameError, match=f"nest deeper than {MAX_DEPTH} levels"):
        loads(deep)
    with pytest.raises(SignalingFrameError, match="nest deeper"):
        loads(opener * 200_000)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"sdp": "[" * 5000 + '\\"{' * 500, "list": [["]]]"]] * 100})
    assert loads(text) == json.loads(text)


def test_integer_digits_are_bounded() -> None:
    assert loads("9" * MAX_INT_DIGITS) == int("9" * MAX_INT_DIGITS)
    assert loads("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    with pytest.raises(SignalingFrameError, match=f"exceeds {MAX_INT_DIGITS} digits"):
        loads('{"peer": ' + "1" * (MAX_INT_DIGITS + 1) + "}")
    with pytest.raises(SignalingFrameError, match="digits"):
        loads("[" + "9" * 100_000 + "]")


def test_size_is_bounded() -> None:
    text = json.dumps("x" * MAX_FRAME_BYTES)
    with pytest.raises(SignalingFrameError, match="byte limit"):
        loads(text)
    with pytest.raises(SignalingFrameError, match="byte limit"):
        loads(text.encode())
    with pytest.raises(SignalingFrameError, match="byte limit"):
        loads("[1]", max_bytes=2)
    assert loads(b'{"a": [1]}') == {"a": [1]}


def test_messages_about_peer_data_are_bounded() -> None:
    key = "k" * 500_000
    with pytest.raises(SignalingFrameError) as info:
        loads(f'{{"{key}": 1, "{key}": 2}}')
    assert len(str(info.value)) < 200


_text = st.text(alphabet=st.sampled_from('ab[]{}"\\/\n\u00e9'), max_size=12)
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**70), 10**70) | st.floats(allow_nan=False,
    allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=60,
)


def _nested(value: Any, extra: int) -> Any:
    for _ in range(extra):
        value = [value]
    return value


@settings(max_examples=400)
@given(_values, st.integers(0, 40))
def test_json_loads_exactly_when_within_bounds(value: Any, extra: int) -> None:
    value = _nested(value, extra)
    text = json.dumps(value)

    def ints(v: Any) -> list[int]:
        if isinstance(v, bool):
            return []
        if isinstance(v, int):
            return [v]
        if isinstance(v, list):
            return [i for item in v for i in ints(item)]
        if isinstance(v, dict):
            return [i for item in v.values() for i in ints(item)]
        return []

    within = _depth(value) <= MAX_DEPTH and all(
        len(str(abs(i))) <= MAX_INT_DIGITS for i in ints(value)
    )
    if within:
        assert loads(text) == value
    else:
        with pytest.raises(SignalingFrameError, match="refused"):
            loads(text)


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from('[]{}"\\,:1a -'), max_size=200))
def test_arbitrary_text_only_raises_signaling_frame_errors(text: str) -> None:
    try:
        loads(text)
    except SignalingFrameError:
        pass

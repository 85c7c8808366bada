"""Length-prefix framing: decoding whole frames from arbitrary chunks, and fuzzing."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lazily_transports import FrameTooLargeError
from lazily_transports._core._framing import FrameDecoder, encode_frame


def test_encode_frame_uses_big_endian_length_prefix() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"


def test_decoder_splits_coalesced_frames_and_keeps_partial_tail() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    data = encode_frame(b"one") + encode_frame(b"") + encode_frame(b"three")
    assert decoder.feed(data[:-2]) == [b"one", b""]
    assert decoder.pending == 7
    assert decoder.expected() == 9
    assert decoder.feed(data[-2:]) == [b"three"]
    assert decoder.pending == 0


def test_decoder_rejects_absurd_length_from_header_alone() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    with pytest.raises(FrameTooLargeError, match="4294967295 bytes") as info:
        decoder.feed(b"\xff\xff\xff\xff")
    assert info.value.size == 2**32 - 1
    assert info.value.limit == 1024


def test_decoder_rejects_length_above_limit_after_buffered_prefix() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    assert decoder.feed(encode_frame(b"ok") + b"\x00\x00") == [b"ok"]
    with pytest.raises(FrameTooLargeError):
        decoder.feed(b"\x00\x0b")


@settings(max_examples=200, deadline=None)
@given(
    frames=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_fuzz_any_chunking_yields_the_same_frames(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(frame) for frame in frames)
    points = sorted({cut % (len(stream) + 1) for cut in cuts} | {0, len(stream)})
    decoder = FrameDecoder(max_frame_size=300)
    decoded: list[bytes] = []
    for start, stop in itertools.pairwise(points):
        decoded.extend(decoder.feed(stream[start:stop]))
    assert decoded == frames
    assert decoder.pending == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8), st.integers(min_value=0, max_value=64))
def test_fuzz_garbage_only_ever_yields_bounded_frames(chunks: list[bytes], limit: int) -> None:
    decoder = FrameDecoder(max_frame_size=limit)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert len(frame) <= limit
    except FrameTooLargeError as exc:
        assert exc.size > limit
        return
    expected = decoder.expected()
    assert expected is None or expected - 4 <= limit

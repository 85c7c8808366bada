"""Bounded CBOR decoding: hostile inputs are refused with one typed error, values round-trip."""

from __future__ import annotations

import datetime
import decimal
import uuid
from fractions import Fraction
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lazily_transports import UntrustedDataError
from lazily_transports.safe_cbor import (
    BUILTIN_TAGS,
    MAX_BIGNUM_BYTES,
    MAX_DECIMAL_DIGITS,
    MAX_DECIMAL_EXPONENT,
    PROTOCOL,
    TUPLE_TAG,
    VALUES,
    CBORProfile,
    brief,
    describe,
)

PROFILES = [PROTOCOL, VALUES]
LIMIT = 1 << 20


def _head(major: int, n: int) -> bytes:
    """A CBOR item head with the shortest argument encoding."""
    if n < 24:
        return bytes([major << 5 | n])
    for info, width in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * width):
            return bytes([major << 5 | info]) + n.to_bytes(width, "big")
    raise ValueError(n)


def _tag(tag: int, payload: bytes) -> bytes:
    return _head(6, tag) + payload


def _dag(depth: int) -> list[Any]:
    """Lists sharing their halves; value sharing encodes it in ~6 bytes per level."""
    node: list[Any] = ["x"]
    for _ in range(depth):
        node = [node, node]
    return node


def dag_as_map_key(depth: int) -> bytes:
    """A map whose single key is the shared-reference DAG (decoded as a tuple, hashed)."""
    return b"\xa1" + cbor2.dumps(_dag(depth), value_sharing=True) + b"\x01"


def _decode(profile: CBORProfile, data: bytes) -> Any:
    return profile.loads(data, max_bytes=LIMIT)


# -- the tag surface ----------------------------------------------------------------------------


def _probe_builtin_tags() -> set[int]:
    """Tags cbor2 decodes by itself: the tag hook is never asked about them."""
    asked: list[int] = []

    def hook(tag: cbor2.CBORTag, immutable: bool) -> Any:
        asked.append(tag.tag)
        return None

    payloads = [cbor2.dumps(0), cbor2.dumps(b""), cbor2.dumps("x"), cbor2.dumps([])]
    large = [2**16, 2**20, 2**31, 2**32 - 1, 2**32, 2**48, 2**63, 2**64 - 1]
    found = set()
    for tag in [*range(65536), *large]:
        for payload in payloads:
            asked.clear()
            try:
                cbor2.loads(_tag(tag, payload), tag_hook=hook)
            except Exception:
                pass
            if not asked:
                found.add(tag)
                break
    return found


def test_every_tag_cbor2_decodes_is_refused_or_allowed_explicitly() -> None:
    found = _probe_builtin_tags()
    assert {28, 29, 25, 256, 258} <= found, "the probe no longer sees cbor2's own tags"
    unlisted = found - set(BUILTIN_TAGS)
    assert not unlisted, f"cbor2 decodes tags {sorted(unlisted)} that safe_cbor does not list"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("tag", sorted(BUILTIN_TAGS))
def test_each_builtin_tag_outside_the_allow_list_is_refused_by_name(
    profile: CBORProfile, tag: int
) -> None:
    if tag in profile.tags:
        return
    for payload in (cbor2.dumps(0), cbor2.dumps(b"\x00" * 16), cbor2.dumps("x")):
        with pytest.raises(UntrustedDataError, match=rf"\btag {tag}\b.*not allowed"):
            _decode(profile, _tag(tag, payload))


def test_value_tags_are_a_small_explicit_set() -> None:
    assert PROTOCOL.tags == frozenset()
    assert VALUES.tags == frozenset({0, 1, 2, 3, 4, 37, 100, 258, 1004, TUPLE_TAG})


def test_tuples_come_back_as_tuples_in_values_only() -> None:
    data = cbor2.dumps([cbor2.CBORTag(TUPLE_TAG, [1, cbor2.CBORTag(TUPLE_TAG, [])]), [2]])
    assert _decode(VALUES, data) == [(1, ()), [2]]
    assert type(_decode(VALUES, data)[0]) is tuple
    with pytest.raises(UntrustedDataError, match=r"tag 1280376833 \(tuple\) is not allowed"):
        _decode(PROTOCOL, data)
    with pytest.raises(UntrustedDataError, match="a tuple must hold an array, not str"):
        _decode(VALUES, cbor2.dumps(cbor2.CBORTag(TUPLE_TAG, "ab")))


@settings(max_examples=200)
@given(st.integers(0, 2**64 - 1).filter(lambda t: t not in BUILTIN_TAGS and t != TUPLE_TAG))
def test_unknown_tags_are_refused(tag: int) -> None:
    for profile in PROFILES:
        with pytest.raises(UntrustedDataError, match=f"unknown tag {tag}"):
            _decode(profile, _tag(tag, b"\x01"))


# -- bombs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_shared_reference_dag_as_map_key_is_refused(profile: CBORProfile) -> None:
    # Shallow enough for the depth limit: the shared-reference tag itself is refused.
    with pytest.raises(UntrustedDataError, match=r"tag 28 \(shared value\)"):
        _decode(profile, dag_as_map_key(6))
    # The attack (~200 bytes, 2^29 hash steps) and deeper: refused before hashing.
    for depth in (29, 64):
        with pytest.raises(UntrustedDataError):
            _decode(profile, dag_as_map_key(depth))


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_shared_and_string_references_are_refused(profile: CBORProfile) -> None:
    with pytest.raises(UntrustedDataError, match="tag 28"):
        _decode(profile, b"\x82" + _tag(28, b"\x80") + _tag(29, b"\x00"))
    with pytest.raises(UntrustedDataError, match="tag 29"):
        _decode(profile, _tag(29, b"\x00"))
    refs = cbor2.dumps(["abcdef"] * 3, string_referencing=True)
    with pytest.raises(UntrustedDataError, match="tag 25"):
        _decode(profile, refs)
    with pytest.raises(UntrustedDataError, match="tag 256"):
        _decode(profile, _tag(256, b"\x01"))


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    "opener", [b"\x81", b"\xa1\x61k", _tag(99, b"")], ids=["array", "map", "tag"]
)
def test_deep_nesting_is_refused(profile: CBORProfile, opener: bytes) -> None:
    with pytest.raises(UntrustedDataError, match="depth"):
        _decode(profile, opener * 10_000 + b"\x00")


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_nesting_up_to_the_limit_is_accepted(profile: CBORProfile) -> None:
    depth = profile.max_depth
    assert _decode(profile, b"\x81" * depth + b"\x00") is not None
    with pytest.raises(UntrustedDataError):
        _decode(profile, b"\x81" * (depth + 1) + b"\x00")
    with pytest.raises(UntrustedDataError):
        profile.loads(b"\x81" * 5 + b"\x00", max_bytes=LIMIT, max_depth=4)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("major", [2, 3, 4, 5])
@pytest.mark.parametrize("length", [2**32 - 1, 2**32, 2**63, 2**64 - 1])
def test_absurd_declared_lengths_are_refused(profile: CBORProfile, major: int, length: int) -> None:
    with pytest.raises(UntrustedDataError):
        _decode(profile, _head(major, length) + b"\x00" * 8)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_thousands_of_colliding_integer_keys_are_refused(profile: CBORProfile) -> None:
    # hash(k * (2**61 - 1)) == 0 for every k: as dict keys they would collide.
    keys = [k * (2**61 - 1) for k in range(1, 5001)]
    data = _head(5, len(keys)) + b"".join(cbor2.dumps(k) + b"\x00" for k in keys)
    with pytest.raises(UntrustedDataError, match="map key must be a text string or byte string"):
        _decode(profile, data)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    "key", [1, -1, 1.5, True, None, [1], {"a": 1}], ids=repr
)
def test_map_keys_must_be_strings(profile: CBORProfile, key: Any) -> None:
    data = b"\xa1" + cbor2.dumps(key) + b"\x00"
    with pytest.raises(UntrustedDataError, match="map key"):
        _decode(profile, data)
    assert _decode(profile, cbor2.dumps({"k": 1, b"b": 2})) == {"k": 1, b"b": 2}


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"\x9f\x01\xff", "indefinite"),
        (b"\x7f\x61a\xff", "indefinite"),
        (b"\xbf\x61a\x01\xff", "indefinite"),
        (b"\xa2\x61a\x01\x61a\x02", "Duplicate map key"),
        (b"\x63\xff\xfe\xfd", "text string"),
        (b"\x82\x01", "premature end"),
        (b"\xff", "break"),
        (b"\x1c", "subtype"),
        (b"", "premature end"),
    ],
)
def test_malformed_input_is_refused(profile: CBORProfile, data: bytes, match: str) -> None:
    with pytest.raises(UntrustedDataError, match=match):
        _decode(profile, data)


def test_size_is_checked_before_decoding() -> None:
    data = cbor2.dumps(b"x" * 100)
    assert PROTOCOL.loads(data, max_bytes=len(data)) == b"x" * 100
    with pytest.raises(UntrustedDataError, match=f"{len(data)} bytes exceed the 100-byte limit"):
        PROTOCOL.loads(data, max_bytes=100)


def test_values_bounds_bignums_and_decimals() -> None:
    big = 2 ** (8 * MAX_BIGNUM_BYTES) - 1
    assert _decode(VALUES, cbor2.dumps([big, -big - 1])) == [big, -big - 1]
    with pytest.raises(UntrustedDataError,
                       match=r"integer of 4104 bits \(a bignum of 513 bytes\) exceeds the 4,096"):
        _decode(VALUES, cbor2.dumps(big + 1))
    with pytest.raises(UntrustedDataError, match="bignum"):
        _decode(VALUES, _tag(3, cbor2.dumps("not bytes")))
    edge = decimal.Decimal(f"1E{MAX_DECIMAL_EXPONENT}")
    assert _decode(VALUES, cbor2.dumps(edge)) == edge
    with pytest.raises(UntrustedDataError, match="decimal exponent"):
        _decode(VALUES, cbor2.dumps(decimal.Decimal("1E-30000")))
    widest = decimal.Decimal("9" * MAX_DECIMAL_DIGITS + "E-3")
    assert _decode(VALUES, cbor2.dumps(widest)) == widest
    with pytest.raises(UntrustedDataError, match="more than 256 digits"):
        _decode(VALUES, cbor2.dumps(decimal.Decimal("1" * (MAX_DECIMAL_DIGITS + 1))))
    with pytest.raises(UntrustedDataError, match="decimal exponent int of"):
        _decode(VALUES, _tag(4, b"\x82" + cbor2.dumps(2**4000) + b"\x01"))
    for bad in (b"\x81\x01", b"\x82\xf5\x01", b"\x82\x01\x61x"):
        with pytest.raises(UntrustedDataError, match="decimal fraction"):
            _decode(VALUES, _tag(4, bad))


def test_values_refuse_what_cbor2_would_build_from_other_tags() -> None:
    import ipaddress
    import re

    for value in (Fraction(1, 3), re.compile("a+"), ipaddress.ip_address("10.0.0.1"), 1 + 2j):
        with pytest.raises(UntrustedDataError, match="not allowed"):
            _decode(VALUES, cbor2.dumps(value))
    with pytest.raises(UntrustedDataError, match="set element"):
        _decode(VALUES, cbor2.dumps({1, 2}))


def test_refusal_messages_are_bounded() -> None:
    huge_key = "k" * 500_000
    cases = [
        b"\xa2" + cbor2.dumps(huge_key) + b"\x01" + cbor2.dumps(huge_key) + b"\x02",
        _tag(0, cbor2.dumps("x" * 500_000)),
        _tag(1004, cbor2.dumps("y" * 500_000)),
    ]
    for data in cases:
        with pytest.raises(UntrustedDataError) as info:
            _decode(VALUES, data)
        assert len(str(info.value)) < 700


def test_describe_is_bounded() -> None:
    assert describe("x" * 10**6).startswith("str of 1000000 chars 'xxx")
    assert len(describe("x" * 10**6)) < 80
    assert describe(b"ab") == "bytes of 2 bytes b'ab'"
    assert describe(2**200) == "int of 201 bits"
    assert describe([0] * 10**6) == "list of 1000000 items"
    assert describe({"a": 1}) == "dict of 1 items"
    assert describe(-5) == "-5" and describe(None) == "None" and describe(1.5) == "1.5"
    assert describe(object()) == "object"
    assert brief("short") == "'short'" and brief(7) == "7"
    assert brief("x" * 81).startswith("str of 81 chars") and brief(2**300) == "int of 301 bits"


# -- properties --------------------------------------------------------------------------------

_keys = st.text(max_size=8) | st.binary(max_size=8)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2 ** (8 * MAX_BIGNUM_BYTES)), 2 ** (8 * MAX_BIGNUM_BYTES) - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=16)
    | st.binary(max_size=16)
    | st.datetimes(timezones=st.just(datetime.UTC))
    | st.dates()
    | st.decimals(allow_nan=False, allow_infinity=False).filter(
        lambda d: abs(int(d.as_tuple().exponent)) <= MAX_DECIMAL_EXPONENT
        and len(d.as_tuple().digits) <= MAX_DECIMAL_DIGITS
    )
    | st.uuids()
    | st.frozensets(st.text(max_size=4), max_size=4)
)
values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=16,
)


@settings(max_examples=400)
@given(values)
def test_values_round_trip(value: Any) -> None:
    assert _decode(VALUES, cbor2.dumps(value)) == value


@settings(max_examples=300)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_only_raise_the_typed_error(data: bytes) -> None:
    for profile in PROFILES:
        try:
            _decode(profile, data)
        except UntrustedDataError:
            pass


@settings(max_examples=300)
@given(values, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6))
def test_mutated_values_only_raise_the_typed_error(
    value: Any, edits: list[tuple[int, int]]
) -> None:
    data = bytearray(cbor2.dumps(value))
    for where, byte in edits:
        data[where % len(data)] = byte
    for profile in PROFILES:
        try:
            _decode(profile, bytes(data))
        except UntrustedDataError:
            pass


def test_a_uuid_and_datetime_decode_to_their_types() -> None:
    u = uuid.UUID(int=7)
    when = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC)
    assert _decode(VALUES, cbor2.dumps([u, when, when.date()])) == [u, when, when.date()]


def test_large_decodes_leave_the_garbage_collector_as_they_found_it() -> None:
    import gc

    from lazily_transports.safe_cbor import GC_PAUSE_BYTES

    big = cbor2.dumps([[]] * GC_PAUSE_BYTES)
    assert gc.isenabled()
    assert len(_decode(VALUES, big)) == GC_PAUSE_BYTES
    assert gc.isenabled()
    with pytest.raises(UntrustedDataError):
        _decode(VALUES, b"\x82" + big + cbor2.dumps(cbor2.CBORTag(28, 0)))
    with pytest.raises(UntrustedDataError):
        _decode(VALUES, b"\x9b" + (2**63).to_bytes(8, "big") + b"\x80" * GC_PAUSE_BYTES)
    assert gc.isenabled()
    gc.disable()
    try:
        _decode(VALUES, big)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("item", [0, "hi", "x" * 120, list(range(5000)), b"z" * 70000])
def test_whole_refuses_bytes_after_the_item_and_takes_the_item_alone(item: Any) -> None:
    data = cbor2.dumps(item)
    assert VALUES.loads(data, max_bytes=1 << 20, whole=True) == item
    for tail in (b"\x00", b"junk" * 1000):
        assert VALUES.loads(data + tail, max_bytes=1 << 20) == item
        with pytest.raises(UntrustedDataError, match=f"{len(tail)} of its"):
            VALUES.loads(data + tail, max_bytes=1 << 20, whole=True)
    with pytest.raises(UntrustedDataError):
        VALUES.loads(data[:-1], max_bytes=1 << 20, whole=True)

"""A decode's budget of tagged values: every tag counts, those cbor2 builds itself too
(datetimes, dates, UUIDs, sets run no hook of ours), a bignum once per 8 bytes of its
magnitude; within the budget the value is what an unbounded decode gives, past it the
input is refused naming the tag and the limit."""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any

import cbor2
import pytest
from lazily_transports import UntrustedDataError
from lazily_transports.safe_cbor import TUPLE_TAG, VALUES

LIMIT = 1 << 20
WHEN = datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC)

#: One value of each tag the values profile allows, as cbor2 (or a client) writes it.
TAGGED: dict[str, tuple[bytes, str]] = {
    "datetime string": (cbor2.dumps(WHEN), "tag 0 (datetime string)"),
    "epoch datetime": (cbor2.dumps(cbor2.CBORTag(1, 5)), "tag 1 (epoch datetime)"),
    "short bignum": (b"\xc2\x41\x01", "tag 2 (bignum)"),
    "short negative bignum": (b"\xc3\x48" + bytes(8), "tag 3 (negative bignum)"),
    "decimal": (cbor2.dumps(decimal.Decimal("1.5")), "tag 4 (decimal fraction)"),
    "uuid": (cbor2.dumps(uuid.UUID(int=7)), "tag 37 (UUID)"),
    "epoch date": (cbor2.dumps(cbor2.CBORTag(100, 3)), "tag 100 (epoch date)"),
    "date string": (cbor2.dumps(cbor2.CBORTag(1004, "2024-05-01")), "tag 1004 (date string)"),
    "set": (cbor2.dumps({"a"}), "tag 258 (set)"),
    "tuple": (cbor2.dumps(cbor2.CBORTag(TUPLE_TAG, [1])), f"tag {TUPLE_TAG} (tuple)"),
}


def _array(item: bytes, count: int) -> bytes:
    return b"\x9a" + count.to_bytes(4, "big") + item * count


@pytest.mark.parametrize("kind", sorted(TAGGED))
@pytest.mark.parametrize("whole", [False, True])
def test_each_allowed_tag_counts_once_against_the_budget(kind: str, whole: bool) -> None:
    item, name = TAGGED[kind]
    count = 300
    data = _array(item, count)
    unbounded = VALUES.loads(data, max_bytes=LIMIT, whole=whole)
    assert VALUES.loads(data, max_bytes=LIMIT, whole=whole, max_tags=count) == unbounded
    with pytest.raises(UntrustedDataError) as refused:
        VALUES.loads(data, max_bytes=LIMIT, whole=whole, max_tags=count - 1)
    assert refused.value.reason == f"more than {count - 1:,} tagged values ({name} is one too many)"


def test_nested_tags_each_count() -> None:
    """A tuple of two sets of strings, ten times: thirty tags."""
    value = cbor2.CBORTag(TUPLE_TAG, [{"a"}, {"b"}])
    data = _array(cbor2.dumps(value), 10)
    assert VALUES.loads(data, max_bytes=LIMIT, max_tags=30) == [({"a"}, {"b"})] * 10
    with pytest.raises(UntrustedDataError, match="more than 29 tagged values"):
        VALUES.loads(data, max_bytes=LIMIT, max_tags=29)


def test_a_bignum_counts_once_per_8_bytes_and_keeps_its_own_bound() -> None:
    """Each bignum is built by a hook of ours (a megabyte of 9-byte ones took 73 ms): one
    over 64 bits counts once per 8 bytes of its magnitude, and one over its own limit is
    refused as such whatever the budget."""
    ints = [2**64, -(2**64) - 1] * 50  # 9-byte magnitudes: twice each
    data = cbor2.dumps([*ints, WHEN])
    assert VALUES.loads(data, max_bytes=LIMIT, max_tags=201) == [*ints, WHEN]
    with pytest.raises(UntrustedDataError, match=r"more than 200 tagged values \(tag 0 "):
        VALUES.loads(data, max_bytes=LIMIT, max_tags=200)
    wide = cbor2.dumps([2**511 + 1] * 3)  # 64 bytes: eight times each
    assert VALUES.loads(wide, max_bytes=LIMIT, max_tags=24) == [2**511 + 1] * 3
    with pytest.raises(UntrustedDataError) as refused:
        VALUES.loads(wide, max_bytes=LIMIT, max_tags=23)
    assert refused.value.reason == ("more than 23 tagged values (tag 2 (bignum), counted once "
                                    "per 8 bytes, is one too many)")
    with pytest.raises(UntrustedDataError, match="4,096-bit limit"):
        VALUES.loads(cbor2.dumps([2**5000] * 3), max_bytes=LIMIT, max_tags=1)


def test_a_refused_tag_is_still_refused_by_name_within_the_budget() -> None:
    data = _array(cbor2.dumps(cbor2.CBORTag(30, [1, 2])), 50)
    with pytest.raises(UntrustedDataError, match=r"tag 30 \(rational"):
        VALUES.loads(data, max_bytes=LIMIT, max_tags=10)


def test_a_megabyte_of_epoch_datetimes_stops_at_the_budget() -> None:
    """Half a million datetimes cbor2 would build without calling back: the lookups stop
    it at the budget, and untagged data of the same size is untouched."""
    data = _array(b"\xc1\x01", (1 << 20) // 2)
    with pytest.raises(UntrustedDataError, match=r"more than 131,072 tagged values \(tag 1 "):
        VALUES.loads(data, max_bytes=2 * LIMIT, max_tags=1 << 17)
    plain = _array(b"\x01", 1 << 20)
    assert VALUES.loads(plain, max_bytes=2 * LIMIT, max_tags=1 << 17) == [1] * (1 << 20)


@pytest.mark.parametrize(("value", "tags"), [
    ([WHEN, WHEN.date(), uuid.UUID(int=1), decimal.Decimal("-0.25"), {"x", "y"}, 2**80], 7),
    ({"k": [WHEN] * 20, "s": {b"a", b"b"}, "t": [1, "x", None, 2.5]}, 21),
])
def test_values_with_as_many_tags_as_the_budget_decode_equal(value: Any, tags: int) -> None:
    data = cbor2.dumps(value)
    assert VALUES.loads(data, max_bytes=LIMIT, max_tags=tags) == value
    with pytest.raises(UntrustedDataError, match=f"more than {tags - 1} tagged values"):
        VALUES.loads(data, max_bytes=LIMIT, max_tags=tags - 1)

"""``shown``: the value a message quotes stays short and never raises."""

from __future__ import annotations

from lazily_transports.errors import shown


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_short_value_is_its_repr() -> None:
    assert shown("abc") == "'abc'" and shown(12) == "12" and shown(b"\x00") == "b'\\x00'"


def test_a_long_value_keeps_its_first_and_last_characters() -> None:
    text = "a" * 50 + "b" * 100_000 + "cdefg"
    assert shown(text) == "'" + "a" * 49 + "...defg'"
    assert shown(bytes(100_000) + b"end") == "b'" + "\\x00" * 12 + "...0end'"
    numbers = shown(list(range(10_000)))
    assert numbers == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,...9999]"


def test_what_repr_cannot_print_is_named_by_its_type() -> None:
    assert shown(10 ** 5000) == "an int of 16610 bits"
    assert shown(Unprintable()) == "a value of type Unprintable that cannot be shown"

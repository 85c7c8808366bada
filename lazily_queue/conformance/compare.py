"""Strict JSON comparison with key-set discipline, and the failure type it raises.

Objects are compared key set first, in both directions (a missing or an extra key is
a mismatch), then value by value. ``true`` is not ``1``: booleans and integers never
compare equal across types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn


@dataclass(frozen=True)
class Mismatch:
    """The first difference found while replaying a fixture."""

    step: int | None
    key: str
    expected: Any
    actual: Any
    message: str = ""

    def describe(self) -> str:
        where = "setup" if self.step is None else f"step {self.step}"
        text = f"{where}: {self.key}"
        if self.message:
            text += f": {self.message}"
        else:
            text += f": expected {_show(self.expected)}, got {_show(self.actual)}"
        return text


class ConformanceFailure(Exception):
    """Raised inside a replay at the first mismatch; carries the :class:`Mismatch`."""

    def __init__(self, mismatch: Mismatch) -> None:
        super().__init__(mismatch.describe())
        self.mismatch = mismatch


def fail(
    step: int | None, key: str, message: str, expected: Any = None, actual: Any = None
) -> NoReturn:
    """Raise a :class:`ConformanceFailure` with an explanatory message."""
    raise ConformanceFailure(Mismatch(step, key, expected, actual, message))


def is_int(value: object) -> bool:
    """A JSON integer (``true``/``false`` excluded)."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_object(value: Any, key: str, keys: frozenset[str]) -> dict[str, Any]:
    """``value`` if it is an object with exactly ``keys``; a setup failure otherwise."""
    if not isinstance(value, dict) or set(value) != keys:
        got = sorted(value) if isinstance(value, dict) else value
        fail(None, key, f"must be an object with keys {sorted(keys)}, got {got!r}")
    return value


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def same_json(expected: Any, actual: Any) -> bool:
    """Structural equality of JSON values; bool and int never mix."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected is actual
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and expected.keys() == actual.keys()
            and all(same_json(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, (list, tuple))
            and len(expected) == len(actual)
            and all(same_json(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if expected is None:
        return actual is None
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return expected == actual
    return type(expected) is type(actual) and bool(expected == actual)


def check(step: int | None, key: str, expected: Any, actual: Any) -> None:
    """Fail at the first difference; object key sets are checked in both directions."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        missing = sorted(set(expected) - set(actual), key=str)
        extra = sorted(set(actual) - set(expected), key=str)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"expected keys missing from the actual value {missing}")
            if extra:
                parts.append(f"actual keys the fixture does not expect {extra}")
            fail(step, key, "key set differs: " + ", ".join(parts), expected, actual)
        for name, value in expected.items():
            check(step, f"{key}.{name}", value, actual[name])
        return
    if isinstance(expected, list) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            fail(
                step,
                key,
                f"expected {_show(expected)} ({len(expected)} items), "
                f"got {_show(list(actual))} ({len(actual)} items)",
                expected,
                actual,
            )
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            check(step, f"{key}[{index}]", want, got)
        return
    if not same_json(expected, actual):
        fail(step, key, "", expected, actual)

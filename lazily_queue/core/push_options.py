"""Per-message push options shared by every cell kind, and their strict wire decoder.

:class:`PushOptions` is one element's options, checked once where the push is made: a
producer ``msg_id`` (deduplicated), ``headers``, a ``ttl_ms`` and a delivery time
(``delay_ms`` after the push, or the epoch time ``not_before_ms``). A cell kind extends it
with its own options (a work queue's priority). On the wire (a replicated op) the options
travel as a map holding only the options given (:meth:`PushOptions.to_map`); a map is
decoded with :func:`decode_map`, strictly: an unknown key or a value of the wrong type is
a ``ValueError`` naming it, which the state machine answers as a refused op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar

from ..errors import shown
from .dedup import MAX_MSG_ID_CHARS, check_msg_id
from .expiry import MAX_TTL_MS, ttl_ms, whole_ms
from .headers import Headers, check_headers
from .scheduling import check_when

P = TypeVar("P", bound="PushOptions")

#: The latest epoch time in ms a ``not_before`` may name, and the longest delay in ms.
MAX_EPOCH_MS = 2**53
MAX_DELAY_MS = MAX_TTL_MS


def whole_delay_ms(seconds: float) -> int:
    """A delay of ``seconds`` (checked: finite, >= 0) in whole milliseconds, at most
    :data:`MAX_DELAY_MS` (a longer one waits that long)."""
    return min(MAX_DELAY_MS, whole_ms(min(seconds, MAX_DELAY_MS / 1000)))


def _msg_id(value: Any) -> str:
    if type(value) is not str or not 0 < len(value) <= MAX_MSG_ID_CHARS:
        raise ValueError(f"msg_id must be a non-empty str of at most {MAX_MSG_ID_CHARS} "
                         "characters")
    return value


def _headers(value: Any) -> Headers:
    try:
        headers = check_headers(value)
    except Exception as exc:  # InvalidHeaders, or a non-mapping value
        raise ValueError(f"headers: {exc}") from None
    if headers is None:
        raise ValueError("headers, when given, hold at least one entry")
    return headers


def _ms(limit: int, what: str, low: int = 1) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if type(value) is not int or not low <= value <= limit:
            raise ValueError(f"{what} must be an int of milliseconds in {low}..{limit}, "
                             f"not {str(value)[:40]}")
        return value
    return check


#: The decoder of each option of :class:`PushOptions` (a subclass adds its own).
FIELD_CHECKS: dict[str, Callable[[Any], Any]] = {
    "msg_id": _msg_id,
    "headers": _headers,
    "ttl_ms": _ms(MAX_TTL_MS, "ttl_ms"),
    "delay_ms": _ms(MAX_DELAY_MS, "delay_ms", 0),
    "not_before_ms": _ms(MAX_EPOCH_MS, "not_before_ms", 0),
}


def decode_map(doc: Any, checks: Mapping[str, Callable[[Any], Any]]) -> dict[str, Any]:
    """``doc`` (a map of option name to value) with each value checked by ``checks``;
    ``ValueError`` naming the first unknown key or bad value."""
    if type(doc) is not dict:
        raise ValueError(f"push options must be a map, not {type(doc).__name__}")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        check = checks.get(key) if type(key) is str else None
        if check is None:
            raise ValueError(f"unknown push option {shown(str(key)[:40])}; known: "
                             f"{', '.join(sorted(checks))}")
        out[key] = check(value)
    return out


@dataclass(frozen=True, slots=True)
class PushOptions:
    """One element's options (module docstring); ``None``: not given."""

    msg_id: str | None = None
    headers: Headers | None = None
    ttl_ms: int | None = None
    delay_ms: int | None = None
    not_before_ms: int | None = None

    CHECKS: ClassVar[Mapping[str, Callable[[Any], Any]]] = FIELD_CHECKS

    def __post_init__(self) -> None:
        if self.delay_ms is not None and self.not_before_ms is not None:
            raise ValueError("give delay_ms or not_before_ms, not both")

    @classmethod
    def checked(cls: type[P], *, msg_id: object = None, headers: object = None,
                ttl: object = None, delay: object = None, not_before: object = None,
                **extra: Any) -> P:
        """The options of a push as a user gives them (``ttl`` and ``delay`` in
        seconds, ``not_before`` an aware datetime), each checked with the typed error
        of its kind (``InvalidMessageId``, ``InvalidHeaders``, ``InvalidTtl``,
        ``InvalidSchedule``)."""
        wait, at = check_when(delay, not_before)
        return cls(
            msg_id=None if msg_id is None else check_msg_id(msg_id),
            headers=None if headers is None else check_headers(headers),  # type: ignore[arg-type]
            ttl_ms=None if ttl is None else ttl_ms(ttl),
            delay_ms=None if wait is None else whole_delay_ms(wait),
            not_before_ms=None if at is None else max(0, whole_ms(at)),
            **extra,
        )

    @property
    def delayed(self) -> bool:
        """Whether the element has a delivery time (``delay_ms`` or ``not_before_ms``)."""
        return self.delay_ms is not None or self.not_before_ms is not None

    def due_ms(self, now_ms: int) -> int | None:
        """When the element pushed at ``now_ms`` may be delivered (``None``: at once)."""
        if self.delay_ms is not None:
            return now_ms + self.delay_ms
        return self.not_before_ms

    def to_map(self) -> dict[str, Any]:
        """The options given, by name (the wire form)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = dict(value) if f.name == "headers" else value
        return out

    @classmethod
    def from_map(cls: type[P], doc: Any) -> P:
        """:meth:`to_map` back; ``ValueError`` naming what is wrong."""
        return cls(**decode_map(doc, cls.CHECKS))

    def is_plain(self) -> bool:
        """Whether no option is given (the plain push)."""
        return all(getattr(self, f.name) is None for f in fields(self))


__all__ = ["FIELD_CHECKS", "PushOptions", "decode_map"]

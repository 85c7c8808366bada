"""Limits of a cell: a maximum length and a maximum of bytes, with an overflow policy.

:class:`Limits` is what a cell is declared with; :class:`Quota` keeps the count the
limits are checked against (the size of each element held, oldest first, their sum and
what was dropped, by reason). Both are plain data, read nothing but their arguments,
so every replica applying the same entries takes the same decisions.

The size of a value (:func:`value_size`): a ``bytes`` value counts its bytes, a ``str``
its UTF-8 bytes, any other value the length of its plain CBOR encoding (tuples as
arrays, the encoding ``cbor2.dumps`` gives). A cell with a serializer stores ``bytes``,
so its sizes are those of the serialized values.

The overflow policy says what a push does when the element would not fit:

- ``reject``: the push is refused (``Full``) and nothing changes; elements waiting to
  fall due (delayed, ``Quota.waiting``) count as held, so the ready and the delayed
  elements together never pass a limit;
- ``drop_oldest``: the oldest ready elements leave, as many as needed for it to fit,
  each counted under the reason ``"drop_oldest"`` (a delayed element makes its room
  when it falls due, so only the ready elements are bounded).

An element larger than ``max_bytes`` never fits: it is refused under either policy.

Each limit is one rule (:data:`RULES`): a rule names the measure it bounds and how many
of the oldest elements must leave for a new one to fit, so a further rule (an age) adds
an entry without changing the others.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

import cbor2

from ..errors import InvalidConfiguration, UnsupportedValue, shown

#: The overflow policies.
REJECT: Final = "reject"
DROP_OLDEST: Final = "drop_oldest"
OVERFLOW_POLICIES: Final = (REJECT, DROP_OLDEST)


def value_size(value: Any) -> int:
    """The size of ``value`` in bytes (module docstring);
    :class:`~lazily_queue.errors.UnsupportedValue` when a value of another type has no
    CBOR encoding (give the cell a serializer)."""
    kind = type(value)
    if kind is bytes or kind is bytearray:
        return len(value)
    if kind is str:
        return len(value.encode())
    try:
        return len(cbor2.dumps(value))
    except (cbor2.CBOREncodeError, TypeError, ValueError) as exc:
        raise UnsupportedValue(
            f"a {kind.__name__} value has no CBOR encoding, so its size cannot be counted "
            "against the cell's limits; give the cell a serializer") from exc


def _bound(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an int >= 1 or None, got {shown(value)}")
    return value


@dataclass(frozen=True, slots=True)
class Limits:
    """``max_length`` elements and ``max_bytes`` bytes (``None``: no such bound), and
    what a push past them does (``overflow``: ``"reject"`` or ``"drop_oldest"``).
    ``ValueError`` for a bound that is not an int >= 1 or an unknown policy."""

    max_length: int | None = None
    max_bytes: int | None = None
    overflow: str = REJECT

    def __post_init__(self) -> None:
        _bound("max_length", self.max_length)
        _bound("max_bytes", self.max_bytes)
        if self.overflow not in OVERFLOW_POLICIES:
            raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_POLICIES)}, "
                             f"got {shown(self.overflow)}")

    @classmethod
    def checked(cls, limits: object, where: str) -> Limits | None:
        """``limits`` when it is ``None`` or a :class:`Limits`;
        :class:`~lazily_queue.errors.InvalidConfiguration` naming ``where`` otherwise
        (before a cell is opened with it)."""
        if limits is None or isinstance(limits, Limits):
            return limits
        raise InvalidConfiguration(
            f"{where}: limits must be a Limits (e.g. Limits(max_length=1000)) or None, "
            f"got {shown(limits)}")

    def doc(self) -> list[Any]:
        """The wire and snapshot form: ``[max_length, max_bytes, overflow]``."""
        return [self.max_length, self.max_bytes, self.overflow]

    @classmethod
    def from_doc(cls, doc: Any) -> Limits:
        """The limits :meth:`doc` describes; ``ValueError`` when malformed."""
        if type(doc) is not list or len(doc) != 3:
            raise ValueError(f"limits must be [max_length, max_bytes, overflow], got {shown(doc)}")
        return cls(doc[0], doc[1], doc[2])

    def describe(self) -> str:
        """``max_length=10, max_bytes=none, overflow=reject`` (in messages)."""
        return (f"max_length={self.max_length or 'none'}, "
                f"max_bytes={self.max_bytes or 'none'}, overflow={self.overflow}")


#: ``rule(limits, count, held, size, sizes)``: how many of the oldest elements must leave
#: for an element of ``size`` bytes to fit among ``count`` elements of ``held`` bytes
#: (``sizes``: those of the elements held, oldest first; 0: it fits), or ``None``: it
#: never fits.
Rule = Callable[[Limits, int, int, int, "deque[int]"], "int | None"]


def _length_rule(limits: Limits, count: int, held: int, size: int,
                 sizes: deque[int]) -> int | None:
    cap = limits.max_length
    return 0 if cap is None else max(0, count + 1 - cap)


def _bytes_rule(limits: Limits, count: int, held: int, size: int,
                sizes: deque[int]) -> int | None:
    cap = limits.max_bytes
    if cap is None:
        return 0
    if size > cap:
        return None
    over = held + size - cap
    k = 0
    while over > 0 and k < len(sizes):
        over -= sizes[k]
        k += 1
    return k + 1 if over > 0 else k


#: Each limit by the name errors and metrics give it.
RULES: dict[str, Rule] = {"max_length": _length_rule, "max_bytes": _bytes_rule}


class Quota:
    """The sizes of the elements a limited cell holds (oldest first), their sum and
    the elements dropped, by reason. The holder reports each change (:meth:`pushed`,
    :meth:`popped`, :meth:`returned`, :meth:`cleared`) in the step that makes it. The
    delayed elements are counted apart (``waiting`` of ``waiting_bytes``): :meth:`check`
    counts them as held, :meth:`room_for` does not."""

    __slots__ = ("bytes", "dropped", "limits", "sizes", "waiting", "waiting_bytes")

    def __init__(self, limits: Limits, values: Iterable[Any] = ()) -> None:
        self.limits = limits
        self.sizes: deque[int] = deque(value_size(v) for v in values)
        self.bytes = sum(self.sizes)
        #: Dropped elements by reason (``"drop_oldest"``, ``"retention"``...).
        self.dropped: dict[str, int] = {}
        self.waiting = 0
        self.waiting_bytes = 0

    def __repr__(self) -> str:
        return f"Quota({self.limits.describe()}, held={len(self.sizes)}, bytes={self.bytes})"

    def check(self, size: int, extra_count: int = 0,
              extra_bytes: int = 0) -> tuple[str, int] | None:
        """``None`` when an element of ``size`` bytes fits as the cell stands, its
        delayed elements included (plus ``extra_count`` elements of ``extra_bytes``
        pushed before it, in a transaction); else the first limit it breaks and how many
        oldest elements must leave for it to fit (``-1``: it never fits)."""
        count = len(self.sizes) + self.waiting + extra_count
        held = self.bytes + self.waiting_bytes + extra_bytes
        for name, rule in RULES.items():
            k = rule(self.limits, count, held, size, self.sizes)
            if k != 0:
                return name, -1 if k is None else k
        return None

    def room_for(self, size: int) -> tuple[str, int] | None:
        """What :meth:`check` says of the ready elements once every rule had its oldest
        elements leave: the number to drop under ``drop_oldest`` is the largest any rule
        asks."""
        need = 0
        broken = None
        for name, rule in RULES.items():
            k = rule(self.limits, len(self.sizes), self.bytes, size, self.sizes)
            if k is None:
                return name, -1
            if k > need:
                need, broken = k, name
        return None if broken is None else (broken, need)

    def is_full(self) -> bool:
        """Whether the smallest element (one byte) would be refused."""
        return self.check(1) is not None

    def pushed(self, size: int) -> None:
        self.sizes.append(size)
        self.bytes += size

    def popped(self, n: int) -> None:
        """The ``n`` oldest elements left."""
        sizes = self.sizes
        for _ in range(n):
            self.bytes -= sizes.popleft()

    def returned(self, values: list[Any]) -> None:
        """``values`` went back to the head, in order."""
        sizes = [value_size(v) for v in values]
        self.sizes.extendleft(reversed(sizes))
        self.bytes += sum(sizes)

    def delayed(self, sizes: Iterable[int]) -> None:
        """Elements of ``sizes`` bytes wait to fall due."""
        for size in sizes:
            self.waiting += 1
            self.waiting_bytes += size

    def joined(self, size: int) -> None:
        """A delayed element of ``size`` bytes fell due and joined the tail."""
        self.waiting -= 1
        self.waiting_bytes -= size
        self.pushed(size)

    def count_dropped(self, reason: str, n: int) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def cleared(self) -> None:
        """Every element left, the delayed ones too."""
        self.sizes.clear()
        self.bytes = self.waiting = self.waiting_bytes = 0

"""The producer dedup window: message ids already applied, and what each push returned.

A push given a ``msg_id`` applies once: while its id is in the window, the same id pushed
again to the same cell applies nothing and returns the first push's result. The window is
bounded twice: by count (``max_entries``, the oldest entry leaves first) and by age (an
entry older than ``max_age`` seconds leaves). Age is measured on the time the owner
supplies in milliseconds: the leader's stamp on a replicated backend (identical on every
replica), the monotonic clock on a local one. A push that was refused (closed, full) is not
recorded: retrying it is a new attempt.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..errors import InvalidConfiguration, InvalidMessageId, shown

K = TypeVar("K", bound=Hashable)

#: The longest message id, in characters.
MAX_MSG_ID_CHARS = 256
#: Default bounds: ids remembered for 5 minutes, at most this many per window.
DEFAULT_MAX_ENTRIES = 20_000
DEFAULT_MAX_AGE = 300.0

_MISSING: Any = object()


def check_msg_id(msg_id: object) -> str:
    """``msg_id`` if it is a valid message id (a non-empty ``str`` of at most
    :data:`MAX_MSG_ID_CHARS` characters), else raise :class:`InvalidMessageId`."""
    if type(msg_id) is not str or not 0 < len(msg_id) <= MAX_MSG_ID_CHARS:
        shown = repr(msg_id)[:60]
        raise InvalidMessageId(
            f"msg_id must be a non-empty str of at most {MAX_MSG_ID_CHARS} characters, "
            f"not {shown}"
        )
    if not msg_id.isascii():
        try:
            msg_id.encode()
        except UnicodeEncodeError:
            raise InvalidMessageId(f"msg_id {msg_id!r:.60} is not valid Unicode text (a lone "
                                   "surrogate)") from None
    return msg_id


@dataclass(frozen=True, slots=True)
class DedupLimits:
    """The bounds of a dedup window: ``max_entries`` ids, each kept ``max_age`` seconds.

    On a replicated backend they must be the same on every member (as
    ``max_message_bytes``): a member with other bounds would forget ids at other times.
    """

    max_entries: int = DEFAULT_MAX_ENTRIES
    max_age: float = DEFAULT_MAX_AGE

    def __post_init__(self) -> None:
        n, age = self.max_entries, self.max_age
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10_000_000:
            raise InvalidConfiguration(
                f"dedup max_entries must be an int from 1 to 10000000, not {shown(n)}")
        if isinstance(age, bool) or not isinstance(age, (int, float)) or not 0 < age <= 7 * 86400:
            raise InvalidConfiguration(
                f"dedup max_age must be seconds above 0 and at most 7 days, not {shown(age)}")

    @property
    def max_age_ms(self) -> int:
        return int(self.max_age * 1000)


class DedupWindow(Generic[K]):
    """Keys of applied pushes, oldest first, with each push's result and time (ms)."""

    __slots__ = ("_entries", "hits", "limits")

    def __init__(self, limits: DedupLimits | None = None) -> None:
        self.limits = limits or DedupLimits()
        self._entries: OrderedDict[K, tuple[Any, int]] = OrderedDict()
        #: Duplicates answered from the window.
        self.hits = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, key: K, now: int) -> tuple[bool, Any]:
        """``(True, first result)`` for a key still in the window at time ``now`` (ms),
        else ``(False, None)``; expires the entries older than the window first."""
        self.expire(now)
        found = self._entries.get(key, _MISSING)
        if found is _MISSING:
            return False, None
        self.hits += 1
        return True, found[0]

    def peek(self, key: K, now: int) -> tuple[bool, Any]:
        """:meth:`lookup` without expiring entries or counting a hit."""
        found = self._entries.get(key, _MISSING)
        if found is _MISSING or found[1] < now - self.limits.max_age_ms:
            return False, None
        return True, found[0]

    def record(self, key: K, result: Any, now: int) -> None:
        """Remember that ``key``'s push applied at ``now`` and returned ``result``."""
        entries = self._entries
        entries[key] = (result, now)
        while len(entries) > self.limits.max_entries:
            entries.popitem(last=False)

    def expire(self, now: int) -> None:
        """Forget the entries recorded more than ``max_age`` before ``now``."""
        entries = self._entries
        horizon = now - self.limits.max_age_ms
        while entries:
            key, (_, at) = next(iter(entries.items()))
            if at >= horizon:
                return
            del entries[key]

    def items(self) -> Iterator[tuple[K, Any, int]]:
        """``(key, result, time)`` of every entry, oldest first."""
        for key, (result, at) in self._entries.items():
            yield key, result, at

    def replace(self, entries: list[tuple[K, Any, int]]) -> None:
        """Replace the contents with ``entries`` (oldest first), kept within the count."""
        self._entries = OrderedDict((key, (result, at)) for key, result, at in entries)
        while len(self._entries) > self.limits.max_entries:
            self._entries.popitem(last=False)

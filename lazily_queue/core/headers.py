"""Message headers: optional ``str`` -> ``str`` maps beside elements, keyed by message id.

Headers travel beside a message, never inside its value: a cell keeps them in a side
table keyed by the element's message id (a queue's id, a topic's offset), so a plain
pop and ``value`` are what they would be without headers, and an element without
headers has no entry at all (it costs nothing). They are bounded
(:data:`MAX_HEADERS`, :data:`MAX_KEY_CHARS`, :data:`MAX_VALUE_CHARS`,
:data:`MAX_HEADER_BYTES`); :func:`check_headers` refuses anything else with
:class:`~lazily_queue.errors.InvalidHeaders` naming the limit and the fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import InvalidHeaders, shown

Headers = dict[str, str]



class FrozenHeaders(Mapping[str, str]):
    """A read-only view of one message's headers (hashable, so it can be a default)."""

    __slots__ = ("_headers",)

    def __init__(self, headers: Headers | None = None) -> None:
        self._headers: Headers = {} if headers is None else headers

    def __getitem__(self, key: str) -> str:
        return self._headers[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __hash__(self) -> int:
        return hash(frozenset(self._headers.items()))

    def __repr__(self) -> str:
        return repr(self._headers)


#: What a message without headers reads: an empty, read-only mapping.
NO_HEADERS: Mapping[str, str] = FrozenHeaders()

MAX_HEADERS = 64
MAX_KEY_CHARS = 256
MAX_VALUE_CHARS = 4096
#: Keys and values of one message together, UTF-8 encoded.
MAX_HEADER_BYTES = 16 * 1024


def check_headers(headers: Any) -> Headers | None:
    """``headers`` as a plain dict (``None`` when empty or ``None``); anything outside
    the limits raises :class:`InvalidHeaders` naming the limit and the fix."""
    if headers is None:
        return None
    if not isinstance(headers, Mapping):
        raise InvalidHeaders(f"headers must be a mapping of str to str, got "
                             f"{type(headers).__name__}; pass e.g. {{'trace-id': '...'}}")
    if not headers:
        return None
    if len(headers) > MAX_HEADERS:
        raise InvalidHeaders(f"{len(headers)} headers exceed the limit of {MAX_HEADERS} per "
                             "message; merge some, or carry the data in the value")
    out: Headers = {}
    total = 0
    for key, value in headers.items():
        if type(key) is not str or type(value) is not str:
            raise InvalidHeaders(
                f"header {shown(str(key)[:40])}: keys and values must be str, got "
                f"{type(key).__name__} -> {type(value).__name__}; convert them with str()")
        if not 0 < len(key) <= MAX_KEY_CHARS:
            raise InvalidHeaders(f"header key {shown(key[:40])} must be 1..{MAX_KEY_CHARS} "
                                 "characters; shorten it")
        if len(value) > MAX_VALUE_CHARS:
            raise InvalidHeaders(f"header {shown(key[:40])}: its value of {len(value)} characters "
                                 f"exceeds the limit of {MAX_VALUE_CHARS}; carry large data "
                                 "in the value")
        try:
            total += len(key.encode()) + len(value.encode())
        except UnicodeEncodeError:
            raise InvalidHeaders(f"header {shown(key[:40])}: its key or value is not valid "
                                 "Unicode text (a lone surrogate); decode the bytes it "
                                 "came from properly") from None
        out[key] = value
    if total > MAX_HEADER_BYTES:
        raise InvalidHeaders(f"headers of {total} bytes exceed the limit of "
                             f"{MAX_HEADER_BYTES} bytes per message; carry large data in "
                             "the value")
    return out


def view(headers: Headers | None) -> Mapping[str, str]:
    """A read-only view of ``headers`` (:data:`NO_HEADERS` for none)."""
    return NO_HEADERS if not headers else FrozenHeaders(headers)


def checked_table(doc: Any, what: str) -> list[tuple[int, Headers]]:
    """``[[id, headers], ...]`` (a snapshot's or a peer's) as pairs, or ``ValueError``
    naming what is wrong."""
    if type(doc) is not list:
        raise ValueError(f"{what} must be a list of [id, headers], not {type(doc).__name__}")
    out: list[tuple[int, Headers]] = []
    for entry in doc:
        if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not int:
            raise ValueError(f"{what}: {str(entry)[:60]} is not [id, headers]")
        try:
            headers = check_headers(entry[1])
        except InvalidHeaders as exc:
            raise ValueError(f"{what}: id {entry[0]}: {exc}") from None
        if headers is not None:
            out.append((entry[0], headers))
    return out


def table_of(entries: Iterable[tuple[int, Headers]]) -> list[list[Any]]:
    """Pairs as the wire/snapshot form ``[[id, headers], ...]``."""
    return [[i, h] for i, h in entries]


class OffsetHeaders:
    """The headers of a topic's elements by offset, or of a work queue's items by item id
    (only those that have some).

    Ids only grow, so entries are kept in id order: a topic's below its base (collected
    elements) leave from the front (:meth:`forget_below`), a work queue's when their
    item is gone (:meth:`keep_only`). ``owner`` is the topic or work queue the table
    belongs to: one deleted and declared again starts over.
    """

    __slots__ = ("_pruned", "_table", "owner")

    def __init__(self, owner: object) -> None:
        self.owner = owner
        self._table: dict[int, Headers] = {}
        self._pruned = 0

    def due(self) -> bool:
        """Whether the table doubled since it was last pruned (:meth:`keep_only`)."""
        return len(self._table) > 2 * self._pruned + 64

    def keep_only(self, live: set[int]) -> None:
        """Drop the entries of ids not in ``live``."""
        self._table = {i: h for i, h in self._table.items() if i in live}
        self._pruned = len(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def note(self, offset: int, headers: Headers) -> None:
        self._table[offset] = headers

    def get(self, offset: int) -> Headers | None:
        return self._table.get(offset) if self._table else None

    def forget_below(self, base: int) -> None:
        table = self._table
        while table:
            first = next(iter(table))
            if first >= base:
                return
            del table[first]

    def entries(self) -> list[list[Any]]:
        """``[[offset, headers], ...]`` (the snapshot form)."""
        return [[i, h] for i, h in self._table.items()]

    def load(self, entries: list[tuple[int, Headers]]) -> None:
        self._table = dict(sorted(entries))

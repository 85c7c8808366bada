"""The member addresses a node keeps in its data directory, to find its peers again.

A member added at run time is reached at the address replicated with it
(``add_member``): a node knows it once that record applies there. After a restart a
node applies its log again only up to the commit index it saved, which can be older
than those records, and the lower id of two members is the one that dials: a node
that founded a cluster and grew it would know its members but reach none of them, and
they would wait for it to dial. So every address applied here is also kept in the
journal's metadata (written with the journal's next write, before anything it logged
after is durable) and used when neither the configuration nor the applied state has
one. It only tells a node where to dial: the link is authenticated as always. What is
kept stays small (the metadata file has a size limit): the :data:`MAX_KEPT` addresses
applied last, each of at most :data:`MAX_CHARS` characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .raft.journal import DurableJournal
from .replicated.events import MemberAddressed

#: The journal metadata field that holds them.
KEY = "member_addresses"
#: The most addresses kept (the ones applied last), and the longest one kept.
MAX_KEPT = 32
MAX_CHARS = 512


class SavedAddresses:
    """The addresses kept in ``journal``'s metadata (none without a journal)."""

    def __init__(self, journal: DurableJournal | None) -> None:
        self._journal = journal
        saved: Any = journal.meta.get(KEY) if journal is not None else None
        self.known: dict[str, str] = {}
        if isinstance(saved, dict):
            self.known = {k: v for k, v in list(saved.items())[-MAX_KEPT:]
                          if type(k) is str and type(v) is str and len(v) <= MAX_CHARS}

    def get(self, member: str) -> str | None:
        return self.known.get(member)

    def observe(self, events: Sequence[object]) -> None:
        """Keep the addresses ``events`` applied (an event observer)."""
        changed = False
        for event in events:
            if (isinstance(event, MemberAddressed) and len(event.address) <= MAX_CHARS
                    and self.known.get(event.node) != event.address):
                self.known.pop(event.node, None)
                self.known[event.node] = event.address  # the newest last
                changed = True
        if not changed:  # most waves: no address among them
            return
        while len(self.known) > MAX_KEPT:
            del self.known[next(iter(self.known))]
        if self._journal is not None:
            self._journal.set_meta(KEY, dict(self.known))

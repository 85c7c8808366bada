"""Ready: what one step of a replica produced, released only once it is durable.

The driver (and the simulator) hand it to a :class:`~.pipeline.CommitPipeline`, which
releases messages after the fsync covering their writes and results as soon as they
may be seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Called with an operation's result, or with the error that ended it.
Completion = Callable[[Any, BaseException | None], None]


@dataclass
class Ready:
    """What one step produced, released only after the journal is durable."""

    messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: What the state machine reported while applying (opaque to consensus).
    events: list[object] = field(default_factory=list)
    completions: list[tuple[Completion, Any, BaseException | None]] = field(default_factory=list)
    orphans: list[tuple[Callable[[Any], None], Any]] = field(default_factory=list)
    membership: list[tuple[str, bool]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.messages or self.events or self.completions or self.orphans
                    or self.membership)

    def take_messages(self, kinds: frozenset[str]) -> Ready:
        """Move the messages of the given types into a new Ready (order kept per peer)."""
        taken: dict[str, list[dict[str, Any]]] = {}
        for peer, messages in list(self.messages.items()):
            if not any(m["type"] in kinds for m in messages):
                continue
            taken[peer] = [m for m in messages if m["type"] in kinds]
            rest = [m for m in messages if m["type"] not in kinds]
            if rest:
                self.messages[peer] = rest
            else:
                del self.messages[peer]
        return Ready(messages=taken)

    def take_results(self) -> Ready:
        """Move the reader events, completions and orphans into a new Ready."""
        taken = Ready(events=self.events, completions=self.completions, orphans=self.orphans)
        self.events, self.completions, self.orphans = [], [], []
        return taken

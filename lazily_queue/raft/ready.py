"""Ready: what one step of a replica produced, released only once it is durable.

The driver (and the simulator) hand it to a :class:`~.pipeline.CommitPipeline`, which
releases messages after the fsync covering their writes and results as soon as they
may be seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Called with an operation's result, or with the error that ended it.
Completion = Callable[[Any, BaseException | None], None]


class Ready:
    """What one step produced, released only after the journal is durable."""

    __slots__ = ("completions", "events", "membership", "messages", "orphans")

    def __init__(
        self,
        messages: dict[str, list[dict[str, Any]]] | None = None,
        events: list[object] | None = None,
        completions: list[tuple[Completion, Any, BaseException | None]] | None = None,
        orphans: list[tuple[Callable[[Any], None], Any]] | None = None,
        membership: list[tuple[str, bool]] | None = None,
    ) -> None:
        self.messages: dict[str, list[dict[str, Any]]] = {} if messages is None else messages
        #: What the state machine reported while applying (opaque to consensus).
        self.events: list[object] = [] if events is None else events
        self.completions: list[tuple[Completion, Any, BaseException | None]] = (
            [] if completions is None else completions)
        self.orphans: list[tuple[Callable[[Any], None], Any]] = (
            [] if orphans is None else orphans)
        self.membership: list[tuple[str, bool]] = [] if membership is None else membership

    def __repr__(self) -> str:
        return (f"Ready(messages={self.messages!r}, events={self.events!r}, "
                f"completions={self.completions!r}, orphans={self.orphans!r}, "
                f"membership={self.membership!r})")

    def __bool__(self) -> bool:
        return bool(self.messages or self.events or self.completions or self.orphans
                    or self.membership)

    def take_messages(self, kinds: frozenset[str]) -> Ready:
        """Move the messages of the given types into a new Ready (order kept per peer);
        :data:`NOTHING` when there are none."""
        for messages in self.messages.values():  # most often none is: found without a copy
            for message in messages:
                if message["type"] in kinds:
                    break
            else:
                continue
            break
        else:
            return NOTHING
        for messages in self.messages.values():  # a leader's appends: all of them go
            for message in messages:
                if message["type"] not in kinds:
                    break
            else:
                continue
            break
        else:
            every, self.messages = self.messages, {}
            return Ready(messages=every)
        taken: dict[str, list[dict[str, Any]]] = {}
        for peer, messages in list(self.messages.items()):
            chosen = [m for m in messages if m["type"] in kinds]
            if not chosen:
                continue
            taken[peer] = chosen
            if len(chosen) == len(messages):
                del self.messages[peer]
            else:
                self.messages[peer] = [m for m in messages if m["type"] not in kinds]
        return Ready(messages=taken) if taken else NOTHING

    def take_results(self) -> Ready:
        """Move the reader events, completions and orphans into a new Ready."""
        taken = Ready(None, self.events, self.completions, self.orphans)
        self.events, self.completions, self.orphans = [], [], []
        return taken


#: An empty output, shared: whoever receives a Ready only reads it or takes from it.
NOTHING = Ready()

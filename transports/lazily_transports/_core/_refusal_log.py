"""RefusalLog: each refused handshake's reason at WARNING once, then at DEBUG."""

from __future__ import annotations

import logging

__all__ = ["RefusalLog"]

#: Reasons remembered at most (a stranger may vary them): the oldest is forgotten.
REASONS_KEPT = 64


class RefusalLog:
    """The level for a refused handshake: WARNING the first time its reason is seen,
    DEBUG while it repeats (a peer dialing or probing again and again is refused for
    the same reason each time), WARNING again once a link was established since
    (:meth:`linked`). A mesh shares one between its listener and its links, so a
    refusal seen from both ends of a link is said once."""

    def __init__(self) -> None:
        self._said: dict[str, None] = {}

    def level(self, reason: str) -> int:
        if reason in self._said:
            return logging.DEBUG
        if len(self._said) >= REASONS_KEPT:
            del self._said[next(iter(self._said))]
        self._said[reason] = None
        return logging.WARNING

    def linked(self) -> None:
        """A link was established: the next refusal of each reason is said again."""
        self._said.clear()

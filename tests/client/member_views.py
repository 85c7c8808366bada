"""Member views for client tests."""

from __future__ import annotations

from typing import Any

from lazily_queue.replicated.view import ReadView


class NoPops:
    """A member's view holding no session's pops (one that installed a snapshot since)."""

    def __init__(self, view: ReadView) -> None:
        self._view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._view, name)

    def client_popped(self, session: int) -> None:
        return None

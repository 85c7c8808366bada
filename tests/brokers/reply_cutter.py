"""A loopback TCP proxy that can cut a connection after the request reached the server
and before its reply reaches the client (the reply of an applied operation is lost)."""

from __future__ import annotations

from .loopback_proxy import Forward, LoopbackProxy


class ReplyCutter(LoopbackProxy):
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``. After :meth:`arm`, the first
    request containing ``marker`` is forwarded, the server's next reply on that
    connection is dropped and the connection closed (both ways); every other connection
    and later request is forwarded normally."""

    def __init__(self, target: int) -> None:
        super().__init__(target)
        self.cut = 0
        self._marker: bytes | None = None

    def arm(self, marker: bytes) -> None:
        self._marker = marker

    def forwards(self) -> tuple[Forward, Forward]:
        doomed = False

        def requests(data: bytes) -> bytes:
            nonlocal doomed
            if self._marker is not None and self._marker in data:
                self._marker = None
                doomed = True
            return data

        def replies(data: bytes) -> bytes | None:
            if doomed:
                self.cut += 1
                return None
            return data

        return requests, replies

"""A loopback TCP proxy that can cut a connection after the request reached the server
and before its reply reaches the client (the reply of an applied operation is lost), or
before the request reaches the server (an operation sent that never applied)."""

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
        self._before_server = False

    def arm(self, marker: bytes, *, before_server: bool = False) -> None:
        self._marker = marker
        self._before_server = before_server

    def forwards(self) -> tuple[Forward, Forward]:
        doomed = False

        def requests(data: bytes) -> bytes | None:
            nonlocal doomed
            if self._marker is not None and self._marker in data:
                self._marker = None
                if self._before_server:
                    self.cut += 1
                    return None
                doomed = True
            return data

        def replies(data: bytes) -> bytes | None:
            if doomed:
                self.cut += 1
                return None
            return data

        return requests, replies

"""A TCP server on 127.0.0.1 that reads what each connection sends first and answers it
with the same canned bytes (an HTTP server, or something that is not a node), or holds
every connection without reading or answering (a node that does not answer in time)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def canned_server(answer: bytes | None) -> Iterator[int]:
    """The port of a server answering every connection ``answer``, then closing it
    (``None``: holding it open, silent, until the server closes)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if answer is None:
                held.append(conn)
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(answer)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        server.close()
        thread.join(timeout=5)
        for conn in held:
            conn.close()

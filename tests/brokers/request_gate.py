"""A loopback TCP proxy in front of a nats-server that drops, while closed, every message
a client publishes to one subject: the server sees no request and sends no answer, as
a subject no one listens on yet under the JetStream API's wildcard. It reads the
client's protocol (control lines and payloads), so it records the subjects published."""

from __future__ import annotations

from .loopback_proxy import Forward, LoopbackProxy


class RequestGate(LoopbackProxy):
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:target``, dropping publishes to
    ``subject`` until :meth:`open`."""

    def __init__(self, target: int, subject: str) -> None:
        super().__init__(target)
        self.subject = subject.encode()
        self.closed = True
        self.dropped = 0
        #: Every subject a client published to, in order (dropped ones included).
        self.published: list[str] = []

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def open(self) -> None:
        self.closed = False

    def _filter(self, buffer: bytearray) -> bytes:
        """The whole commands at the head of ``buffer`` (removed from it) to forward."""
        out = bytearray()
        while (end := buffer.find(b"\r\n")) >= 0:
            line = bytes(buffer[:end + 2])
            words = line.split()
            size = 0
            if words and words[0].upper() in (b"PUB", b"HPUB"):
                size = int(words[-1]) + 2
                if len(buffer) < len(line) + size:
                    break
                self.published.append(words[1].decode())
            command = bytes(buffer[:len(line) + size])
            del buffer[:len(line) + size]
            if size and words[1] == self.subject and self.closed:
                self.dropped += 1
                continue
            out += command
        return bytes(out)

    def forwards(self) -> tuple[Forward, Forward]:
        pending = bytearray()

        def requests(data: bytes) -> bytes:
            pending.extend(data)
            return self._filter(pending)

        return requests, (lambda data: data)

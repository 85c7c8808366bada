"""What an HTTP server answering a WebSocket dial said, when it refused the upgrade."""

from __future__ import annotations

from websockets.exceptions import InvalidHandshake, InvalidStatus

from ..errors import shown


def http_answer(exc: InvalidHandshake) -> str | None:
    """What an HTTP server that refused the upgrade answered, when retrying cannot change
    it (a status below 500: a proxy's 5xx may), else ``None``. An HTTP/1.0 server's
    answer (Python's ``http.server``) is refused by the parser with its status line."""
    if isinstance(exc, InvalidStatus):
        status = exc.response.status_code
        said = exc.response.body.decode("utf-8", "replace").strip().partition("\n")[0]
        return f"HTTP {status} {shown(said)}" if status < 500 else None
    line = str(exc.__cause__).rpartition("expected HTTP/1.1: ")[2]
    version, _, rest = line.partition(" ")
    code = rest[:3]
    if not (version.startswith("HTTP/") and code.isdigit() and int(code) < 500):
        return None
    return shown(line)

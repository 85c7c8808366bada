"""The logger of a node's aiohttp server, which a stranger's bytes cannot fill.

aiohttp reports a request it cannot parse (an over-long header line, too many headers,
a bad chunk size, a body whose ``Content-Encoding`` does not decode) with a traceback
at ERROR, once per request: anyone who reaches the HTTP address could write pages of
them. Through :func:`server_logger` such a report is one WARNING line naming the
cause, at most :data:`LOGGED` per 10 s (the rest are counted in the next line); the
server's other records, a handler's own failure included, pass unchanged.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from lazily_transports import LogLimiter

__all__ = ["LOGGED", "ClientFaults", "request_fault", "server_logger"]

#: Malformed requests logged per 10 s.
LOGGED = 10


def request_fault(exc: BaseException | None) -> str | None:
    """What was wrong with the request when ``exc`` is aiohttp's refusal of its bytes
    (one line), or ``None`` when ``exc`` is something else."""
    seen = 0
    fault: str | None = None
    while exc is not None and seen < 8:
        if isinstance(exc, HttpProcessingError):
            lines = [line.strip() for line in str(exc.message).splitlines() if line.strip()]
            return (lines[0] if lines else type(exc).__name__)[:200]
        if isinstance(exc, RequestPayloadError):
            fault = "its body could not be read"
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return fault


class ClientFaults(logging.Filter):
    """Rewrites aiohttp's report of a malformed request (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._limit = LogLimiter(burst=LOGGED)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or not record.exc_info:
            return True
        fault = request_fault(record.exc_info[1])
        if fault is None:
            return True
        if not self._limit.allow():
            return False
        unlogged = self._limit.take_suppressed()
        source = record.args[0] if isinstance(record.args, tuple) and record.args else None
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.msg = "refused a malformed HTTP request%s: %s%s"
        record.args = ("" if source is None else f" from {source}", fault,
                       f" ({unlogged} more since the last such line)" if unlogged else "")
        record.exc_info = record.exc_text = None
        return True


def server_logger(name: str = "lazily_queue.http") -> logging.Logger:
    """The logger ``name`` with :class:`ClientFaults` on it, for ``AppRunner(logger=...)``."""
    log = logging.getLogger(name)
    if not any(isinstance(f, ClientFaults) for f in log.filters):
        log.addFilter(ClientFaults())
    return log

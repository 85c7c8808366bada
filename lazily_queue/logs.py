"""Logging of the ``lazily-queue node`` process: text or JSON lines on stderr.

``--log-level`` filters what reaches stderr; loggers stay at WARNING or below so that
the node still sees the transport's refusals it reports at start (a wrong secret,
an unknown id). ``--log-format json`` writes one JSON object per line with ``ts``
(UTC, ISO 8601), ``level``, ``logger``, ``message``, the structured fields of state
changes (:mod:`lazily_queue.state_log`) and ``exc`` for an exception.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import IO

#: Record attributes written as JSON keys when a log call sets them.
FIELDS = ("event", "node", "term", "leader", "member", "members", "reason", "seconds", "code",
          "index")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, object] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in FIELDS:
            if key in record.__dict__:
                doc[key] = record.__dict__[key]
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


def configure(level: str, fmt: str = "text", stream: IO[str] | None = None) -> None:
    """Send log records at ``level`` and above to ``stream`` (stderr) as ``fmt``."""
    threshold = logging.getLevelName(level.upper())
    if not isinstance(threshold, int):
        raise ValueError(f"unknown log level {level!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setLevel(threshold)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(min(threshold, logging.WARNING))

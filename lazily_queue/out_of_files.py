"""One log line, not a traceback per connection, when a listener cannot accept for want
of file descriptors.

asyncio logs an error with a traceback for every ``accept()`` refused by the open-file
limit (``EMFILE``, ``ENFILE``), many per second while the limit holds: a node at its
limit would fill its log and spend its loop writing it. :class:`OutOfFiles` (a filter
on the log's handlers) turns them into one line at most every :data:`INTERVAL`
seconds saying what to change, with the number left out since the last one.
"""

from __future__ import annotations

import logging
import resource
import time

#: Seconds between two lines about refused accepts.
INTERVAL = 10.0
_ACCEPT = "socket.accept() out of system resource"


class OutOfFiles(logging.Filter):
    """Rewrites asyncio's refused-accept errors to one line per :data:`INTERVAL`."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -INTERVAL
        #: Refused-accept records dropped since the last line.
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "asyncio" or not str(record.msg).startswith(_ACCEPT):
            return True
        now = time.monotonic()
        if now - self._last < INTERVAL:
            self.dropped += 1
            return False
        self._last, dropped, self.dropped = now, self.dropped, 0
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        error = record.exc_info[1] if record.exc_info else None
        record.msg = ("a listener cannot accept connections: %s (open-file limit %s; %d such "
                      "refusals not logged since the last line); connections wait in the "
                      "backlog. Raise ulimit -n, or lower max_client_links")
        record.args = (error or "out of file descriptors",
                       "unlimited" if soft == resource.RLIM_INFINITY else soft, dropped)
        record.exc_info = record.exc_text = None
        return True

"""Vitals: what only this node knows about itself (version, uptime, fsync, disk, journal,
process).

Members read each other's vitals from ``/vitals.json`` (see :mod:`.peer_pages`) so
that every status page shows every member's fsync latency and free disk, and names a
member whose journal or snapshot its disk refuses (a member in that state sends its
peers no Raft message saying why).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .node import Node

#: Seconds of fsync durations the recent figures cover.
FSYNC_WINDOW = 60.0
_FSYNC_KEPT = 4096


def version() -> str:
    """The installed lazily-queue version (``lazily_queue.__version__``)."""
    from . import __version__

    return __version__


class FsyncWindow:
    """The durations of the recent fsyncs (bounded), for percentiles."""

    def __init__(self, window: float = FSYNC_WINDOW) -> None:
        self.window = window
        self._recent: deque[tuple[float, float]] = deque(maxlen=_FSYNC_KEPT)

    def observe(self, seconds: float) -> None:
        self._recent.append((time.monotonic(), seconds))

    def summary(self) -> dict[str, Any]:
        """``count`` and ``p50_ms`` / ``p99_ms`` / ``max_ms`` over the window (``None``
        without fsyncs: ``durability = "none"`` or an idle node)."""
        horizon = time.monotonic() - self.window
        durations = sorted(d for t, d in self._recent if t >= horizon)
        if not durations:
            return {"count": 0, "p50_ms": None, "p99_ms": None, "max_ms": None,
                    "window_s": self.window}

        def pick(q: float) -> float:
            return round(durations[min(len(durations) - 1, int(q * len(durations)))] * 1000, 3)

        return {"count": len(durations), "p50_ms": pick(0.5), "p99_ms": pick(0.99),
                "max_ms": round(durations[-1] * 1000, 3), "window_s": self.window}


def disk_usage(path: os.PathLike[str] | str) -> dict[str, int | None]:
    """Free and total bytes of the file system holding ``path``."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return {"free_bytes": None, "total_bytes": None}
    return {"free_bytes": usage.free, "total_bytes": usage.total}


def journal_state(node: Node) -> dict[str, Any]:
    """Whether ``node``'s journal accepts writes: ``writable``, the ``error`` while it
    does not and ``since`` when (``time.time()``), and ``snapshot_error``: why the
    leader's snapshot this member needs to catch up cannot be stored (``None`` when it
    can)."""
    driver = node.driver
    return {"writable": driver.disk_error is None, "error": driver.disk_error,
            "since": driver.disk_error_since,
            "snapshot_error": driver.replica.snapshots.write_error}


#: The most characters of a member's journal error a problem quotes (another member's
#: page may send any text, which every member's health would repeat).
PROBLEM_TEXT = 300


def journal_problem(journal: dict[str, Any]) -> str | None:
    """What :func:`journal_state` ``journal`` says is wrong, as a sentence quoting at most
    :data:`PROBLEM_TEXT` characters of its error; ``None`` when nothing is."""
    if not journal.get("writable", True):
        return f"journal not writable: {_quoted(journal.get('error'))}"
    if journal.get("snapshot_error"):
        return ("the leader's snapshot cannot be stored, so this member stays behind "
                f"until its disk takes it: {_quoted(journal['snapshot_error'])}")
    return None


def _quoted(error: object) -> str:
    text = str(error)
    return text if len(text) <= PROBLEM_TEXT else f"{text[:PROBLEM_TEXT]}... ({len(text)} chars)"


def process_figures() -> dict[str, Any]:
    """Resident memory, CPU seconds and open file descriptors of this process."""
    figures: dict[str, Any] = {"pid": os.getpid(), "rss_bytes": None, "open_fds": None}
    try:
        with open(f"/proc/{os.getpid()}/statm") as fh:
            figures["rss_bytes"] = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    with contextlib.suppress(OSError):
        figures["open_fds"] = len(os.listdir(f"/proc/{os.getpid()}/fd"))
    times = os.times()
    figures["cpu_seconds"] = round(times.user + times.system, 3)
    return figures


class Vitals:
    """This node's own figures; ``fsync`` is fed by the monitor's fsync observer."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.started = time.time()
        self.fsync = FsyncWindow()
        self.http_url: str | None = None

    def document(self) -> dict[str, Any]:
        node = self.node
        return {
            "node": node.node_id,
            "cluster": node.cluster,
            "version": version(),
            "python": sys.version.split()[0],
            "started": self.started,
            "uptime_s": round(time.time() - self.started, 3),
            "durability": node.durability,
            "fsync": self.fsync.summary(),
            "disk": disk_usage(node.data_dir),
            "journal": journal_state(node),
            "process": process_figures(),
            "http_url": self.http_url,
        }

"""What ``benchmarks/memory.py`` looks at inside a node process (run from its ``[app]``).

:func:`internals` counts the containers that could grow with traffic (the state
machine's sessions and receipts, the journal, PySyncObj's waiting callbacks, the
replica's proposals, the commit pipeline). :func:`dump` writes those counts, object
counts per type and, when tracing, a ``tracemalloc`` snapshot next to them;
:func:`compare` diffs two dumps of one node. Diagnostics only: these reach into
private attributes and may need updating when the internals move.
"""

from __future__ import annotations

import gc
import json
import os
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

from lazily_queue.allocator import release_free_memory
from lazily_queue.node import Node

#: Frames kept per traced allocation (enough to see who allocates, through asyncio).
TRACE_FRAMES = 8


def rss_kb(pid: int | None = None) -> int:
    """Resident set size (``VmRSS``) of ``pid`` (this process by default), in KiB."""
    path = f"/proc/{pid or os.getpid()}/status"
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


#: The journal's file: preallocated, so zeros follow its last record.
JOURNAL = "journal.log"
#: Most bytes of preallocated zeros a journal holds past its last record (with room).
_ZERO_TAIL = 2 << 20


def _zero_tail(path: str, size: int) -> int:
    """Bytes of zeros at the end of the first ``size`` bytes of ``path`` (at most
    :data:`_ZERO_TAIL`): a journal preallocating more meanwhile adds none."""
    start = max(0, size - _ZERO_TAIL)
    with open(path, "rb") as f:
        f.seek(start)
        tail = f.read(size - start)
    return len(tail) - len(tail.rstrip(b"\0"))


def dir_bytes(path: Path) -> int:
    """Bytes the files under ``path`` hold (0 when it is gone), the journal counted to
    its last record: its preallocated zeros are room, not data."""
    total = 0
    for base, _, files in os.walk(path):
        for name in files:
            full = os.path.join(base, name)
            try:
                size = os.stat(full).st_size
                total += size - (_zero_tail(full, size) if name == JOURNAL else 0)
            except OSError:
                continue
    return total


def _size(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        return -1


def internals(node: Node) -> dict[str, int]:
    """Sizes of the containers that hold per-operation state."""
    driver = node.driver
    replica = driver.replica
    engine = replica.engine
    sm: Any = replica.fsm
    out: dict[str, int] = {
        "journal_entries": len(replica.journal),
        "journal_offsets": len(replica.journal._offsets),
        "journal_pending_bytes": len(replica.journal._pending),
        "unresolved_proposals": len(replica._unresolved),
        "queued_proposals": len(replica._queued),
        "pipeline_held": len(driver.pipeline._held),
        "snapshot_bytes": len(replica.snapshots._data or b""),
        "snapshot_sending": len(replica.snapshots._sending),
    }
    for name in ("commandsWaitingCommit", "commandsWaitingReply", "raftNextIndex",
                 "raftMatchIndex", "lastResponseTime", "onTickCallbacks"):
        out[f"pso_{name}"] = _size(getattr(engine, f"_SyncObj__{name}", None))
    queue = getattr(engine, "_SyncObj__commandsQueue", None)
    if queue is not None:
        out["pso_commandsQueue"] = _size(getattr(queue, "_FastQueue__queue", ()))
    sessions = getattr(sm, "sessions", {})
    out["sessions"] = len(sessions)
    out["session_results"] = sum(len(s.done) for s in sessions.values())
    out["receipts"] = sum(len(w.receipts) for w in getattr(sm, "work_queues", {}).values())
    out["queue_elements"] = sum(q.len() for q in getattr(sm, "queues", {}).values())
    out["topic_retained"] = sum(t.end_offset() - t.base_offset()
                                for t in getattr(sm, "topics", {}).values())
    out["gc_objects"] = len(gc.get_objects())
    return out


def type_counts(limit: int = 60) -> dict[str, int]:
    """The ``limit`` most common object types among those the collector tracks."""
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    return dict(counts.most_common(limit))


def dump(node: Node, directory: Path, label: str) -> Path:
    """Write this node's figures (and tracemalloc snapshot when tracing) for ``label``;
    for the label ``trim``, only its RSS after a collection and
    :func:`~lazily_queue.allocator.release_free_memory` (``trimmed_kb``, 0 where
    there is no ``malloc_trim``)."""
    stem = directory / f"dump-{label}-{node.node_id}"
    if label == "trim":
        before = rss_kb()
        gc.collect()
        doc: dict[str, Any] = {"node": node.node_id, "label": label, "rss_kb": before,
                               "trimmed_kb": rss_kb() if release_free_memory() else 0}
        partial = stem.with_suffix(".partial")
        partial.write_text(json.dumps(doc))
        partial.replace(stem.with_suffix(".json"))
        return stem.with_suffix(".json")
    doc = {"node": node.node_id, "label": label, "rss_kb": rss_kb(),
           "internals": internals(node), "types": type_counts()}
    if tracemalloc.is_tracing():
        tracemalloc.take_snapshot().dump(str(stem.with_suffix(".trace")))
    partial = stem.with_suffix(".partial")
    partial.write_text(json.dumps(doc))
    partial.replace(stem.with_suffix(".json"))
    return stem.with_suffix(".json")


def compare(directory: Path, node_id: str, before: str, after: str,
            top: int = 12) -> list[str]:
    """Lines describing what grew in ``node_id`` between dumps ``before`` and ``after``."""
    a = directory / f"dump-{before}-{node_id}"
    b = directory / f"dump-{after}-{node_id}"
    try:
        first = json.loads(a.with_suffix(".json").read_text())
        second = json.loads(b.with_suffix(".json").read_text())
    except (OSError, ValueError) as exc:
        return [f"node {node_id}: no dumps to compare ({exc})"]
    lines = [f"node {node_id}: internals {before} -> {after}"]
    for key, value in second["internals"].items():
        old = first["internals"].get(key, 0)
        lines.append(f"    {key:28} {old:>12,} -> {value:>12,}")
    grew = sorted(((n - first["types"].get(t, 0), t) for t, n in second["types"].items()),
                  reverse=True)
    lines.append("  object types that grew most (gc-tracked objects):")
    lines += [f"    {t:40} {d:+,}" for d, t in grew[:top] if d > 0]
    if a.with_suffix(".trace").exists() and b.with_suffix(".trace").exists():
        old_snap = tracemalloc.Snapshot.load(str(a.with_suffix(".trace")))
        new_snap = tracemalloc.Snapshot.load(str(b.with_suffix(".trace")))
        lines.append("  tracemalloc, lines whose live allocations grew most:")
        for stat in new_snap.compare_to(old_snap, "lineno")[:top]:
            frame = stat.traceback[0]
            lines.append(f"    {stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8,} blocks  "
                         f"{frame.filename}:{frame.lineno}")
    return lines

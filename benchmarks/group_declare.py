"""What declaring consumer groups at the head of a long topic costs a replica's apply.

    python benchmarks/group_declare.py [--retained N] [--groups G]

A state machine's topic retains N elements (100 an entry); the script times one
``GROUP_DECLARE`` at the head (median of 5), then G declares in one entry with the
growth of the process's resident memory, a snapshot file's capture (the part taken on
the apply loop), its size, the time and resident memory a member takes to restore it
and, with the topic's ttl, one entry sweeping the G groups once every element has
expired. Each figure is printed without expiry (``ttl=False``), with the topic's ttl
(``ttl=True``) and with a ttl of each element's own (``ttl=own``).
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

from lazily_queue.raft.snapshot_format import decode_snapshot, encode_snapshot
from lazily_queue.replicated import ops
from lazily_queue.replicated.state_machine import StateMachine


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def _entry(sm: StateMachine, stamp: int, *op_list: list[Any]) -> list[Any]:
    sm.now = max(sm.now, stamp)
    return [sm.apply_plain(op[0], op[1:]) for op in op_list]


def _topic(retained: int, ttl: bool | str) -> StateMachine:
    sm = StateMachine()
    _entry(sm, 1_000, [ops.TOPIC_DECLARE, "t"])
    if ttl is True:
        _entry(sm, 1_000, [ops.EXPIRY_RULES, "t", "topic", 3_600_000, None])
    publish = ([ops.TOPIC_PUBLISH_OPTIONS, "t", {"ttl_ms": 3_600_000}] if ttl == "own" else
               [ops.TOPIC_PUBLISH, "t"])
    for e in range(retained // 100):
        _entry(sm, 1_000 + e, *[[*publish, f"v{e}-{i}"] for i in range(100)])
    return sm


def _restore(ttl: bool | str, doc: dict[str, Any]) -> None:
    """Print the size of the snapshot file of ``doc`` and what restoring it costs."""
    data = encode_snapshot({"format": 1, "state": doc, "last": (b"", 2, 1),
                            "prev": (b"", 1, 1), "members": ["1"]})
    print(f"ttl={ttl}: its file: {len(data) / 2**20:.1f} MiB")
    gc.collect()
    before, t0 = _rss_mb(), time.perf_counter()
    restored = StateMachine()
    restored.restore(decode_snapshot(data)["state"])
    took = time.perf_counter() - t0
    del data
    gc.collect()
    print(f"ttl={ttl}: decoding and restoring it: {took:.2f} s, "
          f"RSS +{_rss_mb() - before:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--retained", type=int, default=200_000)
    parser.add_argument("--groups", type=int, default=60)
    args = parser.parse_args()
    n, groups = args.retained, args.groups
    ttl: bool | str
    for ttl in (False, True, "own"):
        sm = _topic(n, ttl)
        times = []
        for g in range(5):
            t0 = time.perf_counter()
            assert _entry(sm, 5_000, [ops.GROUP_DECLARE, "t", f"g{g}", 30_000, 3, "head"]) == [
                ["ok", None]]
            times.append(time.perf_counter() - t0)
        print(f"ttl={ttl}: one declare at the head of {n}: median "
              f"{sorted(times)[2] * 1000:.1f} ms")
        gc.collect()
        before, t0 = _rss_mb(), time.perf_counter()
        _entry(sm, 5_000, *[[ops.GROUP_DECLARE, "t", f"m{g}", 30_000, 3, "head"]
                            for g in range(groups)])
        took = time.perf_counter() - t0
        gc.collect()
        print(f"ttl={ttl}: {groups} declares in one entry: {took:.2f} s, "
              f"RSS +{_rss_mb() - before:.0f} MB")
        t0 = time.perf_counter()
        doc = sm.capture(deferred=True)
        print(f"ttl={ttl}: a snapshot file's capture of {groups + 5} groups: "
              f"{time.perf_counter() - t0:.2f} s")
        _restore(ttl, doc)
        if ttl:
            t0 = time.perf_counter()
            swept = _entry(sm, 4_000_000, *[[ops.EXPIRE, f"t:m{g}", "work_queue"]
                                            for g in range(groups)])
            assert swept == [n] * groups
            print(f"ttl={ttl}: one entry sweeping {groups} groups, all {n} expired: "
                  f"{time.perf_counter() - t0:.2f} s")
        del sm
        gc.collect()


if __name__ == "__main__":
    main()

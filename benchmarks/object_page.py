"""The time of one ``/objects.json`` page with many objects.

Builds a table of ``N`` object names (as the state machine's tables hold them) and
times, interleaved, a page as it was built before (every name matching the prefix
sorted at each request) and as :func:`~lazily_queue.object_listing.object_page` builds
it now (the sorted names kept between requests; the names declared meanwhile inserted),
for a first page, a deep page, a prefix page, and a page after 10 objects were
declared and 10 deleted. Wall-clock figures: compare the two columns of one run, not
runs on a loaded machine.

    python benchmarks/object_page.py 10000 100000
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from lazily_queue.object_listing import PAGE_SIZE, object_page


def sorted_each_time(table: dict[str, int], prefix: str, offset: int) -> dict[str, Any]:
    names = sorted(name for name in table if name.startswith(prefix))
    shown = names[offset:offset + PAGE_SIZE]
    return {"matching": len(names), "objects": {name: table[name] for name in shown}}


def kept(table: dict[str, int], prefix: str, offset: int) -> dict[str, Any]:
    return object_page([("queues", table, lambda _n, v: v)], "queues", prefix, offset)


def timed(build: Callable[[dict[str, int], str, int], dict[str, Any]],
          table: dict[str, int], prefix: str, offset: int, churn: bool) -> float:
    if churn:
        for k in range(10):
            table[f"new{time.perf_counter_ns()}-{k}"] = 0
            del table[next(iter(table))]
    started = time.perf_counter()
    build(table, prefix, offset)
    return time.perf_counter() - started


def main(counts: list[int]) -> None:
    print(f"{'objects':>8} {'page':>14} {'sorted ms':>10} {'kept ms':>8}")
    for count in counts:
        table = {f"obj{k * 7919 % count:07}": k for k in range(count)}
        kept(table, "", 0)  # the first request sorts once
        cases = [("first", "", 0, False), ("deep", "", count // 2, False),
                 ("prefix", "obj00", 0, False), ("after churn", "", 0, True)]
        for label, prefix, offset, churn in cases:
            before, now = [], []
            for _ in range(5):  # interleaved A/B
                before.append(timed(sorted_each_time, table, prefix, offset, churn))
                now.append(timed(kept, table, prefix, offset, churn))
            print(f"{count:>8} {label:>14} {min(before) * 1000:>10.2f} "
                  f"{min(now) * 1000:>8.2f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])

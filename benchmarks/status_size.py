"""The size and build time of a status document with many objects.

Builds a state machine holding ``N`` objects (80% queues of 1..10 elements, 10% topics
with one durable subscriber behind, 10% work queues with pending items), then times,
interleaved, the full listing (:func:`~lazily_queue.status.state_status`, what
``/status.json`` listed before it was bounded) and the bounded one
(:func:`~lazily_queue.object_listing.listed_sections`, what it lists now), each with
its JSON encoding, and prints the sizes. Wall-clock figures: compare the two columns of
one run, not runs on a loaded machine.

    python benchmarks/status_size.py 10000 100000
"""

from __future__ import annotations

import json
import sys
import time

from lazily_queue.object_listing import STATUS_OBJECTS, listed_sections
from lazily_queue.replicated import ops as C
from lazily_queue.replicated.state_machine import StateMachine
from lazily_queue.replicated.view import ReadView
from lazily_queue.status import _sections, plain, state_status


def build(count: int) -> ReadView:
    sm = StateMachine()
    for k in range(count):
        name = f"obj{k:07}"
        if k % 10 == 8:
            sm.apply_plain(C.TOPIC_DECLARE, [name])
            sm.apply_plain(C.TOPIC_SUBSCRIBE, [name, "reader", "durable"])
            for i in range(k % 7):
                sm.apply_plain(C.TOPIC_PUBLISH, [name, i])
        elif k % 10 == 9:
            sm.apply_plain(C.WORK_DECLARE, [name, 30_000, 5])
            for i in range(1 + k % 5):
                sm.apply_plain(C.WORK_PUSH, [name, i])
        else:
            sm.apply_plain(C.QUEUE_DECLARE, [name, None])
            for i in range(1 + k % 10):
                sm.apply_plain(C.QUEUE_PUSH, [name, i])
    return ReadView(sm)


def timed(make: object) -> tuple[float, int]:
    started = time.perf_counter()
    body = json.dumps(plain(make()))  # type: ignore[operator]
    return time.perf_counter() - started, len(body)


def main(counts: list[int]) -> None:
    print(f"{'objects':>8} {'full s':>8} {'full bytes':>12} {'listed s':>9} "
          f"{'listed bytes':>13}")
    for count in counts:
        view = build(count)
        full, listed = [], []
        for _ in range(3):  # interleaved A/B
            full.append(timed(lambda v=view: state_status(v)))
            listed.append(timed(lambda v=view: listed_sections(_sections(v), STATUS_OBJECTS)))
        f, b = min(full), min(listed)
        print(f"{count:>8} {f[0]:>8.3f} {f[1]:>12} {b[0]:>9.3f} {b[1]:>13}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])

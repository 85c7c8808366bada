"""The report of the client chaos harness (:mod:`tests.client.chaos_clients`): what was
lost or doubled against every acknowledgement the clients printed, and per scenario the
errors the clients saw, the longest time each made no progress, the jobs claimed again
(leases expired: allowed, work queues deliver at least once) and topic elements got
again (allowed, at least once); then one line per scenario (``stall``: the longest of
any client, seconds; ``again``: jobs claimed again; ``topic2``: topic elements again).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.client.chaos_clients import Harness


def window(h: Harness, t: float) -> str:
    for o in h.outcomes:
        if o.start <= t <= o.end + 1:
            return o.name
    return "(between)"


def report(h: Harness, acked: dict[str, dict[str, float]], dead: int) -> int:
    events = [(c, e) for c in h.clients for e in c.events]
    popped = Counter(e["id"] for _, e in events if e["ev"] == "popped")
    settled = Counter(e["id"] for _, e in events if e["ev"] == "settled" and not e["duplicate"])
    claimed = Counter(e["id"] for _, e in events if e["ev"] == "claimed")
    got = Counter(e["id"] for _, e in events if e["ev"] == "got")
    problems = 0
    losses = {"queue": set(acked["queue"]) - set(popped),
              "work": set(acked["work"]) - set(settled),
              "topic": set(acked["topic"]) - set(got)}
    doubled = {"queue pops": [i for i, k in popped.items() if k > 1],
               "work acks": [i for i, k in settled.items() if k > 1]}
    redelivered = [i for i, k in claimed.items() if k > 1]
    topic_twice = [i for i, k in got.items() if k > 1]
    lost_in: Counter[str] = Counter()
    for kind, lost in losses.items():
        for ident in sorted(lost):
            problems += 1
            lost_in[window(h, acked[kind][ident])] += 1
            print(f"LOST {kind} {ident} acked at {window(h, acked[kind][ident])}")
    for kind, ids in doubled.items():
        for ident in ids:
            problems += 1
            print(f"DOUBLED {kind} {ident}")
    first_claim: dict[str, float] = {}
    again_in: Counter[str] = Counter()
    for _, e in sorted(events, key=lambda ce: ce[1]["t"]):
        if e["ev"] == "claimed":
            if e["id"] in first_claim:
                again_in[window(h, e["t"])] += 1
            first_claim.setdefault(e["id"], e["t"])
    got_again: Counter[str] = Counter()
    seen_got: set[str] = set()
    for _, e in sorted(events, key=lambda ce: ce[1]["t"]):
        if e["ev"] == "got":
            if e["id"] in seen_got:
                got_again[window(h, e["t"])] += 1
            seen_got.add(e["id"])
    print(f"\nacked: queue {len(acked['queue'])}, work {len(acked['work'])}, "
          f"topic {len(acked['topic'])}; dead letters {dead}; redelivered jobs "
          f"{len(redelivered)}; topic elements got twice {len(topic_twice)}")
    killed = getattr(h, "killed_item", None)
    if killed is not None:
        again = [(c.name, e["attempt"]) for c, e in events
                 if e["ev"] == "claimed" and e["item"] == killed and c.name != "w3"]
        settled_by = [c.name for c, e in events if e["ev"] == "settled" and e["item"] == killed]
        print(f"killed worker's item {killed}: claimed again by {again}, settled by "
              f"{settled_by}")
        if not again or not settled_by:
            problems += 1
    rows: list[str] = []
    for o in h.outcomes:
        print(f"\n== {o.name}: {'; '.join(o.notes)}; took {o.end - o.start:.1f} s")
        seen: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        for c, e in events:
            if e["ev"] == "error" and o.start <= e["t"] <= o.end + 1:
                typed = "LazilyQueueError" in e["mro"]
                if not typed:
                    problems += 1
                kinds[e["type"]] += 1
                seen[f"{'' if typed else 'UNTYPED '}{e['type']} applied={e['applied']} "
                     f"[{c.role}] {e['msg'][:160]}"] += 1
        for line, k in seen.most_common():
            print(f"  {k:4d} x {line}")
        stalls = []
        longest = 0.0
        for c in h.clients:
            times = [e["t"] for e in c.events if e["ev"] in h._progress(c)
                     and o.start - 5 <= e["t"] <= o.end + 1]
            if times:
                before = [t for t in times if t <= o.start] or [o.start]
                after = [t for t in times if t > o.start]
                gaps = [b - a for a, b in zip([before[-1], *after], after, strict=False)]
                stalls.append(f"{c.name} {max(gaps, default=0):.1f}")
                longest = max(longest, *gaps, 0.0)
        print("  longest stall (s): " + ", ".join(stalls))
        print(f"  jobs claimed again: {again_in[o.name]}; topic elements again: "
              f"{got_again[o.name]}")
        seen_kinds = ", ".join(f"{k} {n}" for n, k in kinds.most_common()) or "no error"
        rows.append(f"{o.name:30} {seen_kinds[:70]:70} {longest:6.1f} {lost_in[o.name]:5d} "
                    f"{again_in[o.name]:6d} {got_again[o.name]:6d}")
    for c in h.clients:
        if b"Traceback" in c.stderr:
            problems += 1
            print(f"TRACEBACK in {c.name}: {c.stderr.decode()[-2000:]}")
    for i, p in h.cluster.procs.items():
        if "Traceback" in p.stderr():
            problems += 1
            print(f"TRACEBACK in member {i}: {p.stderr()[-2000:]}")
    print(f"\n{'scenario':30} {'errors the clients saw':70} {'stall':>6} {'lost':>5} "
          f"{'again':>6} {'topic2':>6}")
    print("\n".join(rows))
    print(f"\nproblems: {problems}")
    return 1 if problems else 0

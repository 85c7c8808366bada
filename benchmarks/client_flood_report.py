"""What :mod:`benchmarks.client_flood` prints: each system's figures as it ends, the
medians over rounds, and the table a row per system."""

from __future__ import annotations

import os
from typing import Any

from benchmarks.peers_common import markdown_table, median_systems

#: (key, title) of each system in the table.
SYSTEMS = {"lazily": "lazily-queue", "lazily_none": "lazily-queue, durability none",
           "nats": "NATS JetStream R3",
           "nats_shared": "NATS R3, probe on the flood's stream"}


def print_lazily(out: dict[str, Any], flooders: int, seconds: float, clients_at: str,
                 commit_target: float | None = None, rate: float | None = None,
                 durability: str = "fsync") -> None:
    from lazily_queue import ClientAccess
    from lazily_queue.client.fair import fair_budget, fair_window

    access = ClientAccess([]) if commit_target is None else ClientAccess(
        [], commit_target=commit_target)
    if rate is None:
        print(f"{flooders} flooder processes x 4 clients x 512 in flight, plus one greedy "
              f"client with 10,000 at once, for {seconds:g} s")
    else:
        print(f"{flooders} flooder processes x 4 clients, plus one client, offering "
              f"{rate:,g} pushes/s in all for {seconds:g} s (open loop: "
              f"{rate / (4 * flooders + 1):,.1f}/s each, at most 512 outstanding, 10,000 "
              "for the one)")
    if durability == "none":
        print("lazily-queue, durability none: each member writes its log and acknowledges "
              "before any fsync (the durability of this nats-server)")
    print(f"lazily-queue: members serve at most {access.max_in_flight} requests per client "
          f"and {access.max_total_in_flight:,} in all (+{fair_budget(access)['reserve']} for "
          f"light clients), and propose {fair_window(access)['window']} at once "
          f"(+{fair_window(access)['reserve']}), "
          + (f"fewer while clients wait and commits take over {access.commit_target:g} s"
             if access.commit_target else "always (client_commit_target = 0)"))
    where = ("each flooder process starts at a member in turn and stays on it"
             if clients_at == "members" else "every client prefers the leader")
    linked = ", ".join(f"node {node} {count}" for node, count in sorted(
        out["flood_clients_at"].items()))
    print(f"clients: {where}; the flood's clients ended linked to {linked} (the probe "
          "prefers the leader)")
    print(f"leader before {out['leader_before']}, after {out['leader_after']}; seen during "
          f"the flood: {', '.join(out['leaders_seen'])} -> "
          f"{'kept' if out['leader_kept'] else 'NOT kept'}")
    print_probe(out)
    print(f"flood: {out['flood_pushes_per_s']:,} committed pushes/s{_offered(out)}; at most "
          f"{out['max_member_in_flight']} requests in flight on a member")
    print_cpu(out, "members")


def _offered(out: dict[str, Any]) -> str:
    if out.get("flood_rate") is None:
        return ""
    return (f" of {out['flood_rate']:,g} offered ({out['flood_behind']:,} pushes behind "
            f"schedule, never sent; {out.get('flood_behind_late', 0):,} of them as the "
            "flooder's own process was late)")


def print_cpu(out: dict[str, Any], cluster: str) -> None:
    print(f"CPU while flooding ({os.cpu_count()} cores here): the {cluster} "
          f"{out['flood_cluster_cores']} cores ({out['flood_cluster_us_per_op']} us per "
          f"acknowledged push), the flooders {out['flood_clients_cores']}", flush=True)


def print_probe(out: dict[str, Any]) -> None:
    print(f"probe commit latency, 1 in flight: alone p50 {out['baseline_p50_ms']} ms, p99 "
          f"{out['baseline_p99_ms']} ms; under the flood p50 {out['flood_p50_ms']} ms "
          f"({out['flood_p50_ratio']}x alone), p99 {out['flood_p99_ms']} ms "
          f"({out['flood_samples']} samples)")
    if out.get("probe_cpu_wait_ms") is not None:
        print(f"the probe's process waited {out['probe_cpu_wait_ms']} ms for a CPU per time "
              "slice under the flood (the flooders run in a session of their own)")
    if out.get("members_wait_per_run") is not None:
        print(f"the members' event loops waited for a CPU {out['members_wait_per_run']} s per "
              f"second they ran under the flood, {out.get('members_wait_per_run_alone')} s "
              "alone (well over 0: the machine is short of CPUs, and every step of a commit "
              "waits for one)")


def print_nats(out: dict[str, Any]) -> None:
    for note in out["notes"]:
        print(note)
    leaders = ", ".join(f"{stream} {out['leader_before'][stream]} -> "
                        f"{out['leader_after'][stream]}" for stream in out["leader_before"])
    print(f"stream leaders before -> after the flood: {leaders} -> "
          f"{'kept' if out['leader_kept'] else 'NOT kept'}")
    print_probe(out)
    shared = out["shared"]
    print(f"probe on the flood's stream (one Raft group for both): under the flood p50 "
          f"{shared['flood_p50_ms']} ms ({shared['flood_p50_ratio']}x alone), p99 "
          f"{shared['flood_p99_ms']} ms ({shared['flood_samples']} samples)")
    print(f"flood: {out['flood_pushes_per_s']:,} acknowledged publishes/s{_offered(out)} "
          f"({out['flood_failed']:,} publishes failed)")
    print_cpu(out, "servers")


def over_rounds(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each system's figures over several rounds: every figure (the probe's on the
    flood's stream too) is its median over the rounds the system ran in, the leaders count
    as kept only when kept in every one, and ``flood_p50_rounds`` lists each round's
    flood p50. A system that failed in every round keeps its error."""
    combined: dict[str, dict[str, Any]] = {}
    for key, (figures, count) in median_systems(rounds).items():
        if not count:
            combined[key] = figures
            continue
        runs = [systems[key] for systems in rounds
                if key in systems and "error" not in systems[key]]
        out = dict(figures, rounds=count)
        out["leader_kept"] = all(run["leader_kept"] for run in runs)
        out["flood_p50_rounds"] = [run["flood_p50_ms"] for run in runs]
        combined[key] = out
    return combined


def table(systems: dict[str, dict[str, Any]]) -> str:
    """A row per system that ran: the probe's p50 alone, its p50 (and multiple of alone)
    and p99 under the flood, the flood's acknowledged pushes/s (with its offered rate and
    pushes behind schedule when it had a rate), whether leaders held, the cluster's CPU."""
    paced = any(out.get("flood_rate") is not None for out in systems.values())
    lines = [["system", "alone p50 (ms)", "flood p50 (ms, x alone)", "flood p99 (ms)",
              "flood acked/s", *(["offered/s", "behind"] if paced else []), "leader kept",
              "cluster CPU (cores, us/push)"]]
    nats = systems.get("nats")
    if nats is not None and "shared" in nats:
        systems = dict(systems, nats_shared=dict(nats, **nats["shared"]))
    for key, title in SYSTEMS.items():
        out = systems.get(key)
        if out is None or "error" in out:
            continue
        lines.append([title, f"{out['baseline_p50_ms']:.2f}",
                      f"{out['flood_p50_ms']:.2f} ({out['flood_p50_ratio']}x)",
                      f"{out['flood_p99_ms']:.1f}", f"{out['flood_pushes_per_s']:,}",
                      *([_count(out.get("flood_rate")), _behind(out)] if paced else []),
                      "yes" if out["leader_kept"] else "no", _cpu_cell(out)])
    return markdown_table(lines, right=[1, 2, 3, 4, 5, 6, 8] if paced else [1, 2, 3, 4, 6])


def _behind(out: dict[str, Any]) -> str:
    behind, late = out.get("flood_behind"), out.get("flood_behind_late")
    return _count(behind) + (f" ({late:,.0f} late)" if late else "")


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _cpu_cell(out: dict[str, Any]) -> str:
    cores, per_push = out.get("flood_cluster_cores"), out.get("flood_cluster_us_per_op")
    return "-" if cores is None else f"{cores:.2f}, {per_push:.0f}"



"""Running many seeds (in worker processes), fixtures, and the report of a failing seed."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .scenario import Scenario, generate
from .simulation import Outcome, require_hash_seed, run

TRACE_SHOWN = 60


def reproduce_command(seed: int, fixture: str | None = None) -> str:
    target = f"--fixture {fixture}" if fixture else f"--seed {seed}"
    return f"PYTHONHASHSEED=0 python -m simulator {target}"


def _run_seed(seed: int) -> Outcome:
    return run(generate(seed))


def run_seeds(seeds: Iterable[int], jobs: int = 1) -> Iterator[Outcome]:
    """Run each seed's scenario, ``jobs`` at a time in forked processes (same hash seed)."""
    require_hash_seed()
    seeds = list(seeds)
    if jobs <= 1 or len(seeds) <= 1:
        for seed in seeds:
            yield _run_seed(seed)
        return
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(jobs, maxtasksperchild=50) as pool:
        yield from pool.imap_unordered(_run_seed, seeds, chunksize=1)


def load_fixture(path: str | Path) -> tuple[Scenario, dict[str, Any]]:
    """A saved run: its scenario and its ``expect`` section."""
    doc = json.loads(Path(path).read_text())
    return Scenario.from_json(doc["scenario"]), doc.get("expect", {"ok": True})


def save_fixture(path: str | Path, outcome: Outcome, scenario: Scenario, note: str) -> None:
    doc = {
        "description": note,
        "found": outcome.error,
        "scenario": scenario.to_json(),
        "expect": {"ok": True},
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def report(outcome: Outcome, out: TextIO, fixture: str | None = None) -> None:
    """The failing seed: its error, a one-line reproduction and its last steps."""
    print(f"FAIL seed {outcome.seed}: {outcome.error}", file=out)
    print(f"  reproduce: {reproduce_command(outcome.seed, fixture)}", file=out)
    print(f"  last {min(TRACE_SHOWN, len(outcome.trace_tail))} trace lines:", file=out)
    for line in outcome.trace_tail[-TRACE_SHOWN:]:
        print(f"    {line}", file=out)


@dataclass
class Summary:
    """Totals over many runs."""

    runs: int = 0
    failed: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    totals: dict[str, float] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.runs += 1
        if not outcome.ok:
            self.failed.append(outcome)
        for key, value in outcome.stats.items():
            self.totals[key] = self.totals.get(key, 0) + value

    def text(self) -> str:
        rate = self.runs / self.seconds if self.seconds else 0.0
        t = self.totals
        return (
            f"{self.runs} seeds, {len(self.failed)} failed, {self.seconds:.1f}s "
            f"({rate:.1f} seeds/s; {int(t.get('one_member', 0))} run by one member alone); "
            f"{int(t.get('virtual', 0))} virtual s, "
            f"{int(t.get('ops', 0))} checked ops ({int(t.get('deduplicated', 0))} retries "
            f"applied once, {int(t.get('once_repeats', 0))} msg_id repeats answered by the "
            f"dedup window, {int(t.get('group_settled', 0))} elements settled by consumer "
            f"groups ({int(t.get('group_client_acks', 0))} acked by members that are "
            f"clients), {int(t.get('time_positions', 0))} topic starts or seeks by time, "
            f"{int(t.get('headers_checked', 0))} elements' headers checked, "
            f"{int(t.get('delivered_when_due', 0))} delayed work items delivered "
            f"once due), {int(t.get('txn_committed', 0))} transactions committed and "
            f"{int(t.get('txn_aborted', 0))} aborted whole ("
            f"{int(t.get('txn_due_applied', 0))} pushing with options into a bounded queue "
            f"with due delayed elements, {int(t.get('txn_due_refused', 0))} refused full "
            f"by those alone, {int(t.get('txn_ttl_applied', 0))} pushing with a ttl), "
            f"{int(t.get('ttl_expired', 0))} TTL elements expired undelivered "
            f"({int(t.get('ttl_delivered', 0))} delivered live), "
            f"{int(t.get('work_ttl_expired', 0))} TTL work items expired unclaimed "
            f"({int(t.get('work_ttl_delivered', 0))} claimed live), "
            f"{int(t.get('group_ttl_expired', 0))} group elements expired unclaimed "
            f"({int(t.get('group_ttl_delivered', 0))} with a deadline claimed live), "
            f"{int(t.get('options_delivered', 0))} elements pushed with options delivered "
            f"({int(t.get('delayed_delivered', 0))} delayed ones, once due), "
            f"{int(t.get('topic_options_expired', 0))} expired on the option topics "
            f"({int(t.get('topic_options_delivered', 0))} delivered live), "
            f"{int(t.get('client_ops', 0))} client ops logged "
            f"({int(t.get('client_retries', 0))} sent again through another member, "
            f"{int(t.get('consumer_retries', 0))} of them pops, claims or acks; "
            f"{int(t.get('session_answers', 0))} answered with the result they applied "
            f"with), {int(t.get('sessions_ended', 0))} client sessions ended and "
            f"{int(t.get('reaps', 0))} reaps ({int(t.get('ephemeral_removed', 0))} "
            f"ephemeral subscriptions removed with their owner, "
            f"{int(t.get('takeovers', 0))} owners taken over), "
            f"{int(t.get('registered', 0))} client sessions registered "
            f"({int(t.get('late_retries', 0))} ops sent again late, "
            f"{int(t.get('forgotten_refused', 0))} refused under a forgotten session, "
            f"never applied, {int(t.get('sent_again', 0))} of them sent again under a "
            "new session as not applied; "
            f"{int(t.get('fs_forgotten', 0))} forgotten under a client with ops in flight: "
            f"{int(t.get('fs_sent_again', 0))} ops sent again as not applied, "
            f"{int(t.get('fs_failed_forgotten', 0))} failed SessionForgotten, "
            f"{int(t.get('fs_late_held', 0))} held requests read after, "
            f"{int(t.get('fs_waited', 0))} awaited their own answer: "
            f"{int(t.get('fs_stale_applied', 0))} applied before, "
            f"{int(t.get('fs_stale_not_applied', 0))} refused, not applied), "
            f"{int(t.get('kept', 0))} elements delivered once, "
            f"{int(t.get('taken_large', 0))} large ones taken once by takes in flight "
            f"together ({int(t.get('no_room', 0))} answered no_room, taken again), "
            f"pops through Driver.call: {int(t.get('stepped_now', 0))} applied inside "
            f"propose, {int(t.get('cancelled_ready', 0))} cancelled with "
            f"their elements ready, {int(t.get('cancelled_waiting', 0))} while waiting "
            f"({int(t.get('met_cancelled', 0))} applied as they were cancelled); "
            f"{int(t.get('given_back', 0))} cancelled pops given back by on_orphan "
            f"({int(t.get('orphan_give_backs_applied', 0))} give-backs applied, "
            f"{int(t.get('orphan_give_backs_restarted', 0))} lost with a restart of their "
            f"member, {int(t.get('orphan_give_backs_retried', 0))} failed unapplied and "
            f"went again, {int(t.get('orphan_give_backs_failed', 0))} failed, "
            f"{int(t.get('orphan_give_backs_unproposed', 0))} not proposed), "
            f"{int(t.get('given_back_checked', 0))} applied pops of them checked, "
            f"client prefetches: {int(t.get('giver_give_backs', 0))} give-backs applied "
            f"({int(t.get('giver_taken_again', 0))} elements taken again, "
            f"{int(t.get('giver_head_checked', 0))} given-back elements taken in order; "
            f"{int(t.get('giver_handed', 0))} handed out, kept by the client "
            f"{int(t.get('giver_died', 0))} as it died, {int(t.get('giver_unsent', 0))} "
            f"unsent, {int(t.get('giver_refused', 0))} refused by a member's gate; "
            f"{int(t.get('giver_retried_applied', 0))} retries let through as applied, "
            f"{int(t.get('giver_refused_unknown_applied', 0))} give-backs refused as retries, "
            f"their outcome unknown, that had applied; "
            f"{int(t.get('giver_sent_twice', 0))} sent twice through two members, "
            f"{int(t.get('giver_refused_applying', 0))} checked ones refused as they applied), "
            f"{int(t.get('doubles_doubled', 0))} elements given back twice by a producer "
            f"({int(t.get('doubles_both_in_one_pop', 0))} times a client session's pop took "
            "two copies of one), "
            f"{int(t.get('applied', 0))} applications, "
            f"{int(t.get('frames', 0))} frames ({int(t.get('dropped', 0))} lost), "
            f"{int(t.get('leaders', 0))} terms with a leader, {int(t.get('wipes', 0))} wiped "
            f"members, {int(t.get('snapshots', 0))} snapshots installed "
            f"({int(t.get('stale_snapshots', 0))} stale ones refused), "
            f"{int(t.get('damage', 0))} damaged journals or metadata detected, "
            f"{int(t.get('stalls', 0))} disk stalls ({int(t.get('failed_writes', 0))} failed "
            f"writes or fsyncs), {int(t.get('bad_frames', 0))} hostile frames refused, "
            f"fsyncs {int(t.get('inline_fsyncs', 0))} inline and "
            f"{int(t.get('worker_fsyncs', 0))} on the worker thread, "
            f"{int(t.get('light_ticks', 0))} ticks that only committed and applied"
        )


def main_seeds(seeds: list[int], jobs: int, out: TextIO = sys.stdout,
               progress: bool = False) -> Summary:
    summary = Summary()
    started = time.perf_counter()
    for outcome in run_seeds(seeds, jobs):
        summary.add(outcome)
        if not outcome.ok:
            report(outcome, out)
        if progress and summary.runs % 100 == 0:
            print(f"  ... {summary.runs}/{len(seeds)} seeds, {len(summary.failed)} failed",
                  file=out, flush=True)
    summary.seconds = time.perf_counter() - started
    return summary


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))

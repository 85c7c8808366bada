"""Local producer/worker demo: one process, one event loop, verified delivery.

Stage 1 (QueueCell): async producers and one producer thread (through
``QueueCell.threadsafe()``) push numbered items into a bounded queue; competing async
workers drain it until it is closed. Backpressure is the reactive ``is_full`` reader.

Stage 2 (WorkQueueCell): producers push jobs; competing workers claim leases, and a
seeded fraction of deliveries fail (nack) or are abandoned (the lease expires and a
reaper requeues it). Every job must be acknowledged exactly once.

The live display is fed by effects on the cells' readers (``len``, ``in_flight_len``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from ..cells.queue import QueueCell
from ..cells.work_queue import WorkQueueCell
from ..errors import SettlementRejected
from ..reactive import Context, Effect


@dataclass
class DemoConfig:
    producers: int = 3
    items: int = 2000
    """Items per producer (the producer thread pushes as many)."""
    workers: int = 4
    capacity: int = 64
    fail_rate: float = 0.05
    """Work-queue stage: fraction of deliveries nacked, and as many again abandoned."""
    seed: int = 7
    progress: bool = True


@dataclass
class StageReport:
    name: str
    pushed: int
    processed: int
    duplicates: int
    dead_lettered: int = 0
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def lost(self) -> int:
        """Pushed items neither processed nor accounted for as dead letters."""
        return self.pushed - self.processed - self.dead_lettered

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicates == 0


def _progress(console: Console, enabled: bool) -> Progress:
    return Progress(
        TextColumn("{task.description:<22}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        console=console,
        disable=not enabled,
        refresh_per_second=12,
    )


async def queue_stage(config: DemoConfig, progress: Progress) -> StageReport:
    ctx = Context(name="demo-queue")
    queue: QueueCell[tuple[int, int]] = QueueCell(capacity=config.capacity, context=ctx)
    total = (config.producers + 1) * config.items
    produced = progress.add_task("queue: produced", total=total, info="")
    consumed = progress.add_task("queue: consumed", total=total, info="")
    depth = Effect(
        lambda: progress.update(produced, info=f"depth {queue.len()}/{config.capacity}"),
        context=ctx,
        name="demo.depth",
    )
    seen: Counter[tuple[int, int]] = Counter()
    per_worker: Counter[int] = Counter()

    async def producer(pid: int) -> None:
        for seq in range(config.items):
            await queue.push((pid, seq))
            progress.advance(produced)

    def thread_producer(pid: int, handle: Any) -> None:
        for seq in range(config.items):
            handle.push((pid, seq), timeout=30)
            progress.advance(produced)

    async def worker(wid: int) -> None:
        async for item in queue:
            seen[item] += 1
            per_worker[wid] += 1
            progress.advance(consumed)
            if per_worker[wid] % 50 == 0:
                await asyncio.sleep(0.001)  # simulated work; lets producers refill

    workers = [asyncio.create_task(worker(w)) for w in range(config.workers)]
    handle = queue.threadsafe()
    await asyncio.gather(
        *(producer(p) for p in range(config.producers)),
        asyncio.to_thread(thread_producer, config.producers, handle),
    )
    await queue.close()
    await asyncio.gather(*workers)
    depth.dispose()
    expected = {(p, s) for p in range(config.producers + 1) for s in range(config.items)}
    processed = len(expected & set(seen))
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    unknown = len(set(seen) - expected)
    notes = {"per worker": dict(sorted(per_worker.items())), "capacity": config.capacity}
    return StageReport("QueueCell", total, processed, duplicates + unknown, notes=notes)


async def work_stage(config: DemoConfig, progress: Progress) -> StageReport:
    ctx = Context(name="demo-work")
    rng = random.Random(config.seed)
    cell = WorkQueueCell(
        visibility_timeout=0.05, max_deliveries=8, clock=time.monotonic, context=ctx
    )
    total = config.producers * config.items
    acked_task = progress.add_task("work: acknowledged", total=total, info="")
    stats: Counter[str] = Counter()

    def show() -> None:
        progress.update(
            acked_task,
            info=f"pending {cell.pending_len()} in-flight {cell.in_flight_len()} "
            f"dead {cell.dead_letter_len()}",
        )

    display = Effect(show, context=ctx, name="demo.work")
    acked: Counter[Any] = Counter()
    done = asyncio.Event()

    async def producer(pid: int) -> None:
        for seq in range(config.items):
            await cell.push((pid, seq))
            if seq % 100 == 0:
                await asyncio.sleep(0)

    async def worker(name: str) -> None:
        while not done.is_set():
            try:
                delivery = await cell.claim(name, timeout=0.02)
            except TimeoutError:
                continue
            roll = rng.random()
            if roll < config.fail_rate:
                stats["nacked"] += 1
                with contextlib.suppress(SettlementRejected):  # the lease already expired
                    await cell.nack(name, delivery.delivery_id)
            elif roll < 2 * config.fail_rate:
                stats["abandoned"] += 1  # never settled: the lease expires
            else:
                try:
                    await cell.ack(name, delivery.delivery_id)
                except SettlementRejected:
                    stats["late acks"] += 1
                else:
                    acked[delivery.value] += 1
                    progress.advance(acked_task)
            if delivery.attempt > 1:
                stats["redeliveries"] += 1
            await asyncio.sleep(0)
            if sum(acked.values()) + cell.dead_letter_len() >= total:
                done.set()

    async def reaper() -> None:
        while not done.is_set():
            await asyncio.sleep(0.01)
            stats["reaped"] += await cell.reap_expired()

    tasks = [asyncio.create_task(worker(f"w{n}")) for n in range(config.workers)]
    tasks.append(asyncio.create_task(reaper()))
    await asyncio.gather(*(producer(p) for p in range(config.producers)))
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
    display.dispose()
    dead = cell.dead_letters()
    duplicates = sum(n - 1 for n in acked.values() if n > 1)
    return StageReport("WorkQueueCell", total, len(acked), duplicates, len(dead), dict(stats))


async def run_demo(config: DemoConfig, console: Console) -> list[StageReport]:
    with _progress(console, config.progress) as progress:
        reports = [await queue_stage(config, progress)]
        reports.append(await work_stage(config, progress))
    return reports


def summary_table(reports: list[StageReport]) -> Table:
    table = Table(title="verified delivery")
    table.add_column("stage")
    for column in ("pushed", "processed", "dead letters", "lost", "duplicates"):
        table.add_column(column, justify="right")
    for r in reports:
        counts = (r.pushed, r.processed, r.dead_lettered, r.lost, r.duplicates)
        table.add_row(r.name, *(str(n) for n in counts))
    return table


def main(config: DemoConfig, console: Console | None = None) -> int:
    """Run both stages, print the summary; 0 when nothing was lost or duplicated."""
    console = console or Console()
    started = time.perf_counter()
    reports = asyncio.run(run_demo(config, console))
    console.print(summary_table(reports))
    for r in reports:
        console.print(f"{r.name}: " + ", ".join(f"{k} {v}" for k, v in r.notes.items()))
    ok = all(r.ok for r in reports)
    verdict = "OK: nothing lost, nothing duplicated" if ok else "FAILED: items lost or duplicated"
    console.print(f"{verdict} ({time.perf_counter() - started:.2f}s)")
    return 0 if ok else 1

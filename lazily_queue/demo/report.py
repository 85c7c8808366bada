"""The cluster demo's live display and its verified summary."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

if TYPE_CHECKING:
    from .ledger import Tally
    from .processes import NodeProcess


@dataclass(frozen=True)
class Failover:
    """Seconds from the SIGKILL to the new leader's election and first commit."""

    old_leader: int
    new_leader: int
    old_term: int
    new_term: int
    elected: float
    first_commit: float


@dataclass
class Summary:
    """What the ledger and the replicas say at the end of the run."""

    tally: Tally
    expected: int
    failover: Failover | None
    catch_up: float | None
    replicas: list[dict[str, Any]]
    exit_codes: list[int | None]
    elapsed: float
    error: str | None
    directory: Path
    writes_resumed: float | None = None

    @property
    def in_sync(self) -> bool:
        """Every replica applied the same log and holds the same work-queue counts."""
        if len(self.replicas) < 3:
            return False
        views = {(s["last_applied"], repr(s["work_queues"].get("demo.jobs", {}).get("pending")),
                  repr(s["work_queues"].get("demo.jobs", {}).get("dead_letters")))
                 for s in self.replicas}
        return len(views) == 1

    @property
    def ok(self) -> bool:
        t = self.tally
        return (self.error is None and t.lost == 0 and t.duplicates == 0
                and t.unknown_items == 0 and t.pushed + t.unconfirmed == self.expected
                and self.in_sync)

    def rows(self) -> list[tuple[str, str, str]]:
        t = self.tally
        expired = max(0, t.redeliveries - t.failed)
        rows = [
            ("pushed", f"{t.pushed}", "acknowledged by the cluster"),
            ("unconfirmed", f"{t.unconfirmed}",
             f"producer killed before the acknowledgement ({t.unconfirmed_arrived} arrived)"),
            ("processed", f"{t.processed}", "jobs whose effect was applied"),
            ("lost", f"{t.lost}", "acknowledged, never processed (must be 0)"),
            ("duplicates", f"{t.duplicates}", "effect applied twice for a job (must be 0)"),
            ("redeliveries", f"{t.redeliveries}",
             f"at least once: {t.failed} after injected failures, {expired} after expired "
             f"leases; {t.skipped} skipped, effect already applied"),
        ]
        if self.failover is not None:
            f = self.failover
            rows.append(("failover", f"{f.first_commit * 1000:.0f} ms",
                         f"kill of leader {f.old_leader} to node {f.new_leader}'s first commit "
                         f"in term {f.new_term} (elected at {f.elected * 1000:.0f} ms)"))
        if self.writes_resumed is not None:
            rows.append(("writes resumed", f"{self.writes_resumed * 1000:.0f} ms",
                         "kill to the first push made after it acknowledged"))
        if self.catch_up is not None:
            rows.append(("rejoined", f"{self.catch_up:.2f} s",
                         "from the restarted node's start to applying all it missed"))
        rows.append(("replicas", "in sync" if self.in_sync else "DIFFER",
                     "same applied index and queue counts on all nodes"))
        rows.append(("time", f"{self.elapsed:.1f} s", f"data and logs: {self.directory}"))
        return rows

    def print(self, console: Console) -> None:
        table = Table(title="lazily-queue cluster demo: verified summary", show_header=False)
        table.add_column("")
        table.add_column("", justify="right")
        table.add_column("")
        for name, value, note in self.rows():
            table.add_row(name, value, note)
        console.print(table)
        if self.error is not None:
            console.print(f"[red]error: {self.error}[/red]")
        if self.ok:
            console.print("[green]OK: nothing lost, nothing applied twice[/green]")
        else:
            console.print("[red]FAILED: see the rows above and the node logs[/red]")


class Display:
    """Progress bars, a per-node table and an event log, live while the demo runs."""

    def __init__(self, total: int, console: Console, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self.started = time.monotonic()
        self.progress = Progress(
            TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(),
            console=console,
        )
        self.pushed = self.progress.add_task("pushed (acknowledged)", total=total)
        self.processed = self.progress.add_task("processed (effect applied)", total=total)
        self.events: list[str] = []
        self.nodes = Table()
        self.live = Live(self._render(), console=console, refresh_per_second=8,
                         transient=False, auto_refresh=enabled)

    def __enter__(self) -> Display:
        if self.enabled:
            self.live.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.enabled:
            self.live.update(self._render())
            self.live.__exit__(exc_type, exc, tb)
            self.console.print()

    def event(self, text: str) -> None:
        line = f"+{time.monotonic() - self.started:5.1f}s  {text}"
        self.events.append(line)
        if not self.enabled:
            self.console.print(line)

    def update(self, tally: Tally, nodes: list[NodeProcess]) -> None:
        self.progress.update(self.pushed, completed=tally.pushed)
        self.progress.update(self.processed, completed=tally.processed)
        table = Table(expand=False)
        for column in ("node", "pid", "state", "term", "commit", "applied", "pending",
                       "in flight", "dead"):
            table.add_column(column, justify="left" if column in ("node", "state") else "right")
        for node in nodes:
            s = node.status
            if s is None:
                state = "starting" if node.alive else "[red]down[/red]"
                table.add_row(str(node.node_id), str(node.pid or "-"), state, *["-"] * 6)
                continue
            work = s["work_queues"].get("demo.jobs", {})
            state = f"[bold]{s['state']}[/bold]" if s["state"] == "leader" else s["state"]
            table.add_row(str(node.node_id), str(node.pid), state, str(s["term"]),
                          str(s["commit_index"]), str(s["last_applied"]),
                          str(work.get("pending", 0)), str(work.get("in_flight", 0)),
                          str(work.get("dead_letters", 0)))
        self.nodes = table
        if self.enabled:
            self.live.update(self._render())

    def _render(self) -> Group:
        return Group(self.progress, self.nodes, *self.events[-8:])

"""What every driver of ``benchmarks/peers.py`` shares: the figures, payload, load shapes,
timing helpers and server processes that are always torn down.

A driver returns a dict of figures keyed by the names in :data:`ROWS` (a missing key
means the system has no such figure) plus free-form notes under ``"notes"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Every message is this many bytes.
PAYLOAD = b"x" * 100
#: Producers keep this many pushes in flight.
INFLIGHT = 256
#: Batch size of the peers' consumers (JetStream fetch, Redis XREADGROUP COUNT).
BATCH = 100


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    higher_is_better: bool
    #: False for context rows (no ratio): the conditions a system ran under.
    compared: bool = True


ROWS: tuple[Row, ...] = (
    Row("produce_per_s", "produce, 256 in flight", "/s", True),
    Row("end_to_end_per_s", "end to end, 1 consumer, 256 pushing", "/s", True),
    Row("work_queue_per_s", "work queue, 256 pushing, 8 workers claim+ack", "/s", True),
    Row("fanout_per_s", "topic fan-out, 4 durable subscribers (deliveries)", "/s", True),
    Row("p50_ms_3", "push->ack p50, 1 in flight, 3 members", "ms", False),
    Row("p99_ms_3", "push->ack p99, 1 in flight, 3 members", "ms", False),
    Row("p50_ms_1", "push->ack p50, 1 in flight, one member", "ms", False),
    Row("p99_ms_1", "push->ack p99, 1 in flight, one member", "ms", False),
    Row("serial_claim_ack_per_s_1", "one member, serial claim+ack", "/s", True),
    Row("serial_pop_per_s_1", "one member, serial pop", "/s", True),
    Row("pop_each_per_s_1", "one member, pop one at a time, a commit each", "/s", True),
    Row("fdatasync_before_ms", "context: disk fdatasync p50 before the system ran", "ms",
        False, compared=False),
    Row("fdatasync_after_ms", "context: disk fdatasync p50 after the system ran", "ms",
        False, compared=False),
)


#: How to install the peers' Python clients.
PIP = "pip install -e '.[bench]' in the lazily-queue clone"


def missing(binary: str | None, module: str, package: str) -> str | None:
    """Why a peer cannot run here (``binary`` not on ``PATH``, or its Python client
    ``module`` not importable), with how to install it; ``None`` when it can."""
    if binary is not None and shutil.which(binary) is None:
        return f"{binary} not found: apt install {binary}"
    if importlib.util.find_spec(module) is None:
        return f"Python client {package} missing: {PIP}"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    """(p50, p99) in milliseconds of ``samples`` in seconds."""
    ordered = sorted(samples)
    if not ordered:
        return 0.0, 0.0

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)

    return at(0.50), at(0.99)


async def spread(count: int, op: Callable[[], Awaitable[Any]],
                 inflight: int = INFLIGHT) -> None:
    """Run ``op`` ``count`` times with ``inflight`` calls outstanding at any moment."""
    todo: Iterator[int] = iter(range(count))

    async def lane() -> None:
        for _ in todo:
            await op()

    await asyncio.gather(*(lane() for _ in range(min(inflight, count))))


async def serial_latency(count: int, op: Callable[[], Awaitable[Any]]) -> dict[str, float]:
    """``op`` one at a time: p50/p99 in ms and the rate."""
    await op()  # warm-up
    samples: list[float] = []
    started = time.perf_counter()
    for _ in range(count):
        t0 = time.perf_counter()
        await op()
        samples.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - started
    p50, p99 = percentiles(samples)
    return {"p50_ms": p50, "p99_ms": p99, "per_s": round(count / elapsed)}


def fdatasync_p50_ms(directory: Path, count: int = 100) -> float:
    """The disk's p50 fdatasync of a 100-byte append in ``directory`` (context for the
    fsync-bound rows; other load on the machine moves it a lot)."""
    path = directory / "fdatasync-probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    samples: list[float] = []
    try:
        for _ in range(count):
            os.write(fd, PAYLOAD)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            samples.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return percentiles(samples)[0]


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU of a process so far (this process for ``None``; Linux)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def flood_cpu(pids: Sequence[int | None], before: float, elapsed: float, acked: int,
              clients: float) -> dict[str, Any]:
    """What the cluster's processes (``pids``, whose CPU summed ``before`` when a flood
    began) and the flood's client processes (``clients`` CPU seconds) used over the
    flood's ``elapsed`` seconds: cores kept busy, and the cluster's CPU per acknowledged
    op."""
    used = sum(cpu_seconds(pid) for pid in pids) - before
    return {"flood_cluster_cores": round(used / elapsed, 2),
            "flood_cluster_us_per_op": round(used / acked * 1e6, 1) if acked else None,
            "flood_clients_cores": round(clients / elapsed, 2)}


def rate(count: int, elapsed: float) -> int:
    return round(count / elapsed) if elapsed > 0 else 0


# -- server processes ---------------------------------------------------------------------------

#: Process groups started by this run; :func:`reap` kills whatever is still alive.
GROUPS: set[int] = set()


def median_figures(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One system's figures over several runs: each number (not a flag) that every run
    has is its median (a whole number when every run's is), a mapping every run has is
    taken the same way, anything else is the last run's."""
    out = dict(runs[-1])
    for key, value in out.items():
        values = [run.get(key) for run in runs]
        if all(isinstance(v, dict) for v in values):
            out[key] = median_figures(values)
            continue
        if isinstance(value, bool) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            continue
        middle = statistics.median(values)
        out[key] = round(middle) if all(isinstance(v, int) for v in values) else round(
            middle, 3)
    return out


def median_systems(rounds: Sequence[dict[str, dict[str, Any]]]
                   ) -> dict[str, tuple[dict[str, Any], int]]:
    """Each system's :func:`median_figures` over the rounds it ran in (a round's
    figures without ``"error"``) and how many those were; a system that failed in every
    round keeps its first error, with 0."""
    out: dict[str, tuple[dict[str, Any], int]] = {}
    for name in dict.fromkeys(n for one in rounds for n in one):
        runs = [one[name] for one in rounds if name in one and "error" not in one[name]]
        out[name] = ((median_figures(runs), len(runs)) if runs
                     else (next(one[name] for one in rounds if name in one), 0))
    return out


def markdown_table(lines: Sequence[Sequence[str]], right: Sequence[int] = ()) -> str:
    """``lines`` (the header first) as a Markdown table: every row, the separator
    included, has the header's columns; the columns whose index is in ``right`` are
    right-aligned."""
    width = len(lines[0])
    if any(len(line) != width for line in lines):
        raise ValueError(f"every row of a table has the header's {width} columns")
    widths = [max(len(line[i]) for line in lines) for i in range(width)]

    def row(line: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if i in right else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(line, widths, strict=True))) + " |"

    text = [row(line) for line in lines]
    text.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(text)


def track(pid: int) -> None:
    """Remember a process group leader (a child started with ``start_new_session``)."""
    GROUPS.add(pid)


def node_config(root: Path, node: int, size: int, cluster: str, secret_env: str,
                app: dict[str, Any]) -> Path:
    """Write ``root/node{node}.toml``: member ``node`` of ``size`` over Unix sockets under
    ``root``, fsync, its secret in ``secret_env``, ``app`` as its ``[app]`` table."""
    peers = "\n".join(f'{i} = "unix://{root}/n{i}.sock"' for i in range(1, size + 1))
    lines = [f"id = {node}", f'cluster = "{cluster}"', f'data_dir = "{root}/d{node}"',
             f'listen = "unix://{root}/n{node}.sock"', 'durability = "fsync"',
             f'secret_env = "{secret_env}"', "startup_timeout = 60", "", "[peers]", peers, "",
             "[app]", *(f"{key} = {json.dumps(value)}" for key, value in app.items())]
    path = root / f"node{node}.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object a node's app wrote at ``path``; None while it is missing or partly
    written."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc


def node_env(**variables: str) -> dict[str, str]:
    """This process's environment for a ``lazily-queue node`` child: ``variables`` added
    and the repository first on ``PYTHONPATH`` (apps and benchmarks import from it)."""
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, **variables)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


async def start_nodes(procs: Sequence[Any], timeout: float = 60) -> None:
    """Start node processes (``NodeProcess``), track them for :func:`reap` and wait until
    each one is ready."""
    for proc in procs:
        await proc.start()
        if proc.pid is not None:
            track(proc.pid)
    for proc in procs:
        await proc.wait_ready(timeout)


def reap() -> None:
    """SIGKILL every tracked process group that is still alive (last-resort cleanup)."""
    for pgid in list(GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        GROUPS.discard(pgid)


class Server:
    """A server binary in its own process group, logging to a file in the run directory;
    ``env`` is its whole environment (this process's when None), ``start_timeout`` how
    long :meth:`wait_port` waits for it by default."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None,
                 start_timeout: float = 20.0) -> None:
        self.argv = argv
        self.log = log
        self.env = env
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, env=self.env,
                                         start_new_session=True)
        track(self.proc.pid)

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    async def wait_port(self, port: int, timeout: float | None = None) -> None:
        """Wait until ``port`` accepts connections (at most ``timeout`` seconds, the
        server's ``start_timeout`` when None); fail with the log if the server exits."""
        timeout = self.start_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.argv[0]} exited ({self.proc.returncode}): "
                                   f"{self.log_tail()}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return
        raise RuntimeError(f"{self.argv[0]} did not listen on {port} within {timeout}s: "
                           f"{self.log_tail()}")

    async def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``timeout``."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while proc.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        GROUPS.discard(proc.pid)


#: How many times ``listening`` starts servers whose free port was taken meanwhile.
PORT_ATTEMPTS = 4
#: How a server's log says its port was taken (the C library's words, Erlang's).
PORT_TAKEN = ("address already in use", "eaddrinuse")


@contextlib.asynccontextmanager
async def listening(build: Callable[[int], tuple[list[Server], list[int]]]
                    ) -> AsyncIterator[list[Server]]:
    """Start the servers ``build(attempt)`` makes, each listening on its port (same order),
    and stop every one however the block ends. A port found free can be bound by another
    process before the server binds it: a server that exits with its address in use is
    stopped with the rest, and ``build`` is asked for servers on fresh ports."""
    for attempt in range(PORT_ATTEMPTS):
        items, ports = build(attempt)
        stack = contextlib.AsyncExitStack()
        await stack.enter_async_context(servers(*items))
        try:
            for server, port in zip(items, ports, strict=True):
                await server.wait_port(port)
            for server, port in zip(items, ports, strict=True):  # none exited meanwhile
                await server.wait_port(port)
        except RuntimeError as exc:
            await stack.aclose()
            taken = any(words in str(exc).lower() for words in PORT_TAKEN)
            if taken and attempt + 1 < PORT_ATTEMPTS:
                continue
            raise
        except BaseException:
            await stack.aclose()
            raise
        async with stack:
            yield items
        return


@contextlib.asynccontextmanager
async def servers(*items: Server) -> AsyncIterator[None]:
    """Start ``items``; stop every one of them however the block ends."""
    try:
        for server in items:
            server.start()
        yield
    finally:
        for server in items:
            await server.stop()

"""The flood's client processes, in a session of their own, apart from the probe.

Linux shares the CPU between sessions first when autogroup scheduling is on
(``/proc/sys/kernel/sched_autogroup_enabled``, the default of most distributions), then
between the processes of each session. The nodes and servers run in sessions of their
own; a probe left in the flooders' session waits for a CPU behind them whenever it
wakes for an answer (on a 2-core machine about 13 ms a wake-up, measured with
:func:`run_queue_wait`), which is the harness's own CPU sharing, not the cluster's. So
:func:`start_flood` runs every flooder under one launcher started in a new session:
together they keep the share one session had, and the probe (this process) is a light
client in a session of its own, as a separate application would be.

A probe measures the flood only once it is on: a flooder may take seconds to start (a
tree without compiled bytecode imports slowly). Flooder scripts begin with
:data:`MARK_READY` and call its ``linked(clients)`` as each client has connected and
holds what it publishes to; the last one marks the process ready in the directory
given to :func:`start_flood`, and :func:`flood_ready` waits for every flooder's mark.
A flooder that should start only then (a paced one, whose schedule must span the
probe's time) awaits ``flood_on()``, which returns once :func:`release_flood` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

from benchmarks.peers_common import track

LAUNCHER = r'''
import json, subprocess, sys
argvs = json.loads(sys.argv[1])
procs = [subprocess.Popen(argv, stdout=subprocess.PIPE) for argv in argvs]
outs = [p.communicate()[0].decode() for p in procs]
print(json.dumps([[p.returncode, out] for p, out in zip(procs, outs)]), flush=True)
'''

#: The environment variable naming the directory flooders mark themselves ready in.
READY_ENV = "LAZILY_FLOOD_READY"

#: The start of a flooder script: ``linked(clients)`` counts a client linked (connected,
#: holding what it publishes to); at the ``clients``-th, the process is marked ready (an
#: empty file named by its pid in the directory :data:`READY_ENV` names, if any);
#: ``await flood_on()`` returns once :func:`release_flood` was called (at once without
#: such a directory).
MARK_READY = rf'''
import os as _os
_linked = [0]
def linked(clients):
    _linked[0] += 1
    where = _os.environ.get("{READY_ENV}")
    if _linked[0] == clients and where:
        open(_os.path.join(where, str(_os.getpid())), "w").close()
async def flood_on():
    import asyncio as _asyncio
    where = _os.environ.get("{READY_ENV}")
    while where and not _os.path.exists(where + ".on"):
        await _asyncio.sleep(0.01)
'''

#: Seconds :func:`flood_ready` waits for every flooder to be ready.
READY_LIMIT = 60.0


class FloodFailed(RuntimeError):
    """A flooder process exited with an error (which one and its exit status), or the
    flooders were not all ready in time (how many were)."""


async def start_flood(argvs: list[list[str]], env: dict[str, str] | None = None,
                      ready: Path | None = None) -> asyncio.subprocess.Process:
    """Start the flooder processes ``argvs`` under one launcher in a new session (the
    module docstring), with ``env`` (this process's by default); with ``ready``, a
    directory created here, where they mark themselves ready (:func:`flood_ready`).
    :func:`flood_outputs` waits for them."""
    if ready is not None:
        ready.mkdir()  # noqa: ASYNC240 - set-up
        env = dict(os.environ if env is None else env, **{READY_ENV: str(ready)})
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LAUNCHER, json.dumps(argvs), env=env,
        stdout=asyncio.subprocess.PIPE, start_new_session=True)
    track(proc.pid)
    return proc


async def flood_ready(proc: asyncio.subprocess.Process, ready: Path, count: int,
                      limit: float = READY_LIMIT) -> None:
    """Return once ``count`` flooders started by :func:`start_flood` with ``ready`` have
    marked themselves ready there. Raise :class:`FloodFailed` saying how many had when the
    flood ended first (with the flooder that failed) or ``limit`` seconds passed."""
    deadline = time.monotonic() + limit
    while (done := len(list(ready.iterdir()))) < count:  # noqa: ASYNC240 - a few files
        if proc.returncode is not None:
            why = "every flooder ended"
            try:
                await flood_outputs(proc)
            except FloodFailed as exc:
                why = str(exc)
            raise FloodFailed(f"{done} of {count} flooder processes became ready before "
                              f"the flood ended ({why})")
        if time.monotonic() >= deadline:
            raise FloodFailed(f"{done} of {count} flooder processes became ready within "
                              f"{limit:g} s (one that failed to start printed why)")
        await asyncio.sleep(0.05)


def release_flood(ready: Path) -> None:
    """Tell the flooders started with ``ready`` that the flood is on: their
    ``flood_on()`` returns."""
    ready.with_name(ready.name + ".on").touch()


async def flood_outputs(proc: asyncio.subprocess.Process) -> list[str]:
    """What each flooder printed, in the order started; raises :class:`FloodFailed` for
    one that exited with an error (or a launcher that did)."""
    stdout, _ = await proc.communicate()
    if proc.returncode != 0:
        raise FloodFailed(f"the flood's launcher exited with status {proc.returncode}")
    outputs: list[str] = []
    for k, (status, text) in enumerate(json.loads(stdout.decode())):
        if status != 0:
            raise FloodFailed(f"flooder process {k} exited with status {status}")
        outputs.append(text)
    return outputs


async def stop_flood(proc: asyncio.subprocess.Process | None) -> None:
    """Kill the launcher and its flooders if they are still running."""
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


def run_queue_wait() -> tuple[float, int] | None:
    """This process's time waiting for a CPU so far (seconds) and its time slices
    (Linux ``/proc/self/schedstat``); ``None`` where it is not kept."""
    try:
        fields = Path("/proc/self/schedstat").read_text().split()
        return int(fields[1]) / 1e9, int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def cpu_and_wait(pids: list[int | None]) -> tuple[float, float] | None:
    """The CPU seconds the main threads of ``pids`` ran so far and the seconds they waited
    for a CPU (Linux ``/proc/PID/schedstat``); ``None`` where it is not kept."""
    ran = waited = 0.0
    try:
        for pid in pids:
            fields = Path(f"/proc/{pid}/schedstat").read_text().split()
            ran += int(fields[0]) / 1e9
            waited += int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None
    return ran, waited


def wait_per_run(before: tuple[float, float] | None,
                 after: tuple[float, float] | None) -> float | None:
    """Seconds waited for a CPU per second run between two :func:`cpu_and_wait` readings
    (over 1: the processes waited longer than they ran; ``None`` without both)."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return round((after[1] - before[1]) / (after[0] - before[0]), 2)


def wait_per_wake(before: tuple[float, int] | None,
                  after: tuple[float, int] | None) -> float | None:
    """Milliseconds this process waited for a CPU per time slice between two
    :func:`run_queue_wait` readings (``None`` without both)."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / (after[1] - before[1]) * 1000, 2)


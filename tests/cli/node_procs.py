"""Real ``lazily-queue node --config FILE`` processes for tests."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lazily_queue.brokers.servers import threads_stopped

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "lazily_queue"]
SECRET_ENV = "LAZILY_TEST_SECRET"
#: ``lazily-queue`` as the version before the newest handshake feature.
OLDER_CLI = [sys.executable, "-m", "older_version"]


def write_config(path: Path, node_id: int, peers: dict[int, str], *, cluster: str = "test",
                 data_dir: str | None = None, extra: str = "", app: str = "",
                 http: str = "127.0.0.1:0") -> Path:
    lines = [f"id = {node_id}", f'cluster = "{cluster}"',
             f'data_dir = "{data_dir or f"data{node_id}"}"', f'http = "{http}"',
             'durability = "none"', f'secret_env = "{SECRET_ENV}"', extra, "[peers]"]
    lines += [f'{p} = "{a}"' for p, a in peers.items()]
    if app:
        lines += ["[app]", app]
    path.write_text("\n".join(lines) + "\n")
    return path


def unix_peers(root: Path, ids: tuple[int, ...] = (1, 2, 3)) -> dict[int, str]:
    return {i: f"unix:{root}/n{i}.sock" for i in ids}


def ready_fields(line: str) -> dict[str, str]:
    """The ``key=value`` fields of a ``ready`` line (an address given by a host name is
    followed by ``(bound HOST:PORT)``, which is no field)."""
    return dict(part.split("=", 1) for part in line.split()[1:] if "=" in part)


class NodeProc:
    """One node process; its stdout lines are collected by a thread."""

    def __init__(self, config: Path, *, secret: str | None = "s3cret",
                 env: dict[str, str] | None = None, args: tuple[str, ...] = (),
                 cwd: Path | None = None, cli: list[str] = CLI) -> None:
        environ = dict(os.environ, **(env or {}))
        environ["PYTHONPATH"] = os.pathsep.join(
            [str(HERE), *filter(None, [environ.get("PYTHONPATH")])])
        environ.pop(SECRET_ENV, None)
        if secret is not None:
            environ[SECRET_ENV] = secret
        self.proc = subprocess.Popen(
            [*cli, "node", "--config", str(config), *args], cwd=cwd or config.parent,
            env=environ,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.errors: list[str] = []
        self._pumps = [threading.Thread(target=self._pump, daemon=True),
                       threading.Thread(target=self._pump_errors, daemon=True)]
        for pump in self._pumps:
            pump.start()
        self.url: str | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def _pump_errors(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors.append(line)

    def wait_line(self, prefix: str, timeout: float = 20.0,
                  match: Callable[[str], bool] | None = None) -> str:
        """The first stdout line starting with ``prefix`` (and passing ``match``)."""
        deadline = time.monotonic() + timeout
        checked = 0  # lines of ``seen`` already compared (a chatty node prints thousands)
        while True:
            for line in self.seen[checked:]:
                if line.startswith(prefix) and (match is None or match(line)):
                    return line
            checked = len(self.seen)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (self.proc.poll() is not None and self.lines.empty()):
                tail = self.seen[-200:]
                raise AssertionError(
                    f"no {prefix!r} line; last of {len(self.seen)} stdout lines {tail}; "
                    f"stderr: {self.stderr()[-20000:]}")
            try:
                self.seen.append(self.lines.get(timeout=min(remaining, 0.2)))
                while True:
                    self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                pass

    def wait_ready(self) -> str:
        line = self.wait_line("ready ")
        fields = ready_fields(line)
        self.url = fields["http"]
        return self.url

    def status(self) -> dict[str, Any]:
        assert self.url is not None
        with urllib.request.urlopen(self.url + "/status.json", timeout=5) as response:
            document: dict[str, Any] = json.load(response)
        return document

    def wait_exit(self, timeout: float = 60.0) -> int:
        """The exit status, waiting at most ``timeout`` for it: a node that refuses to
        run exits within seconds, but starting a process on a loaded machine can take
        twenty (the bound catches a node that does not exit, not a slow one)."""
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        """What the process wrote to stderr (all of it once it has exited)."""
        if self.proc.poll() is not None:
            self._pumps[1].join(5)
        return "".join(self.errors)

    def pause(self, timeout: float = 10.0) -> None:
        """SIGSTOP the node, returning once every thread of it is stopped (the kernel stops
        them after ``kill`` returns; until then the node goes on answering)."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        wait_for(lambda: threads_stopped(self.proc.pid), timeout, "the node stopped")

    def terminate(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.drain()
        return code

    def drain(self) -> list[str]:
        """Once the process has exited: every stdout line it wrote, in ``seen`` too."""
        self._pumps[0].join(5)
        while True:
            try:
                self.seen.append(self.lines.get_nowait())
            except queue.Empty:
                return self.seen


def wait_for(predicate: Any, timeout: float = 15.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")

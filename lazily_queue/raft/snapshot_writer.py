"""SnapshotWriter: writes one snapshot file at a time, on a worker thread or on the
caller's, and tells the caller (who polls) when that write has ended.

What is written is bytes, or a job making them (the encoding of a captured state),
which runs just before the write, where the write runs; on the worker thread the job
gets a :class:`LockYield` to call between short pieces of work. With
:attr:`SnapshotWriter.background` (the driver's choice) the job and the write (file,
fsync, rename, directory fsync: :meth:`Disk.replace`) run on one worker thread and the
event loop goes on meanwhile. Without it (the simulator, tests) the write runs on the caller's
thread, at once or only at the :attr:`SnapshotWriter.delay_polls`-th poll after it
started: a slow disk, deterministically, that a crash meanwhile leaves unwritten. Both
modes end through the same poll, so the caller handles one path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

#: Called by a job between short pieces of work (``None``: on the caller's thread).
Pause = Callable[[], None]
#: What to write: the bytes, or a job returning them.
Data = bytes | Callable[[Pause | None], bytes]


class LockYield:
    """A :data:`Pause` for work on a worker thread beside an event loop: once ``work``
    seconds have passed since it last slept, it sleeps ``rest`` seconds, which hands the
    interpreter lock to the loop's thread if it waits for it. Without it the loop's
    every turn waits for the interpreter's switch interval (5 ms by default)."""

    __slots__ = ("_clock", "_mark", "_sleep", "rest", "sleeps", "work")

    def __init__(self, work: float = 0.001, rest: float = 0.00002, *,
                 clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.work = work
        self.rest = rest
        self._clock = clock
        self._sleep = sleep
        self._mark = clock()
        #: How often it slept.
        self.sleeps = 0

    def __call__(self) -> None:
        if self._clock() - self._mark >= self.work:
            self._sleep(self.rest)
            self.sleeps += 1
            self._mark = self._clock()


class SnapshotWriter:
    """One write in flight at most (see the module docstring)."""

    def __init__(self, write: Callable[[bytes], None]) -> None:
        """``write(data)`` makes ``data`` the snapshot file, durably and atomically."""
        self._write = write
        #: Write on a worker thread.
        self.background = False
        #: Without :attr:`background`: polls a write waits for before it runs.
        self.delay_polls = 0
        #: Writes that ran on the worker thread.
        self.background_writes = 0
        self._executor: ThreadPoolExecutor | None = None
        self._future: Future[bytes] | None = None
        self._data: Data = b""
        self._polls_left = 0

    @property
    def pending(self) -> bool:
        """A write started and its outcome was not yet taken by :meth:`take`."""
        return self._future is not None

    @property
    def running(self) -> bool:
        """A write is under way on the worker thread (no poll is needed for it to end)."""
        future = self._future
        return future is not None and self.background and not future.done()

    def start(self, data: Data) -> None:
        """Start writing ``data``, or what the job ``data`` returns (the previous
        write's outcome must have been taken)."""
        if self._future is not None:
            raise RuntimeError("a snapshot is already being written")
        future: Future[bytes]
        if self.background:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="lazily-snapshot")
            future = self._executor.submit(self._make_and_write, data, True)
            self.background_writes += 1
        else:
            future = Future()
            self._polls_left = self.delay_polls
            if not self._polls_left:
                self._run_here(future, data)
        self._future, self._data = future, data

    def _make_and_write(self, data: Data, worker: bool = False) -> bytes:
        raw = data if isinstance(data, bytes) else data(LockYield() if worker else None)
        self._write(raw)
        return raw

    def _run_here(self, future: Future[bytes], data: Data) -> None:
        self._polls_left = 0
        try:
            raw = self._make_and_write(data)
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(raw)

    def poll(self) -> bool:
        """Whether the write in flight has ended (a delayed one runs at its last poll)."""
        future = self._future
        if future is None:
            return False
        if not future.done() and self._polls_left > 0:
            self._polls_left -= 1
            if not self._polls_left:
                self._run_here(future, self._data)
        return future.done()

    def take(self) -> tuple[bytes, BaseException | None]:
        """The ended write's bytes and error (``None``: it is durable; the bytes are
        empty when a job failed); blocks until it ended, running a delayed write now."""
        future, data = self._future, self._data
        if future is None:
            raise RuntimeError("no snapshot is being written")
        if not future.done() and self._polls_left:
            self._run_here(future, data)
        error = future.exception()  # waits for the worker thread
        self._future, self._data = None, b""
        if error is not None:
            return (data if isinstance(data, bytes) else b""), error
        return future.result(), None

    def close(self) -> None:
        """Stop the worker thread once the write in flight ended (its outcome stays to
        take); a later background write starts another."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

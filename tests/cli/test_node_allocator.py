"""``lazily-queue node`` hands the C allocator's free pages back after each snapshot."""

from __future__ import annotations

import asyncio
import gc
import io
import platform
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from lazily_queue import allocator
from lazily_queue.config import parse_config
from lazily_queue.service import NodeService


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_what_survives_a_full_collection_is_spared_by_the_next() -> None:
    automatic = gc.isenabled()
    gc.disable()  # only this test's collections: an automatic full one would freeze too
    stop = allocator.freeze_survivors()
    try:
        before = gc.get_freeze_count()
        kept = [[i] for i in range(5_000)]
        gc.collect(1)  # a young collection freezes nothing
        assert gc.get_freeze_count() == before
        gc.collect()
        assert gc.get_freeze_count() >= before + 5_000
        assert not any(obj is kept for obj in gc.get_objects(generation=2))
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()
    frozen = gc.get_freeze_count()
    gc.collect()  # stopped: nothing more is frozen
    assert gc.get_freeze_count() == frozen == 0


class _Cycle:
    """An object in a reference cycle: freed only by a collection that traverses it."""

    def __init__(self) -> None:
        self.me = self


def test_garbage_among_the_spared_is_collected_once_they_stayed_past_the_bound() -> None:
    automatic = gc.isenabled()
    gc.disable()
    start = allocator.freeze_started_process()
    stop = allocator.freeze_survivors(growth=1, floor=10_000, steady=3)
    try:
        first: list[weakref.ref[_Cycle]] = []
        highest = 0
        for _ in range(40):  # 40 x 1,000 cycles, alive at a full collection ...
            cycles = [_Cycle() for _ in range(1_000)]
            first.append(weakref.ref(cycles[0]))
            gc.collect()
            del cycles  # ... then garbage, which reference counting does not free
            highest = max(highest, gc.get_freeze_count())
        assert first[0]() is None  # collected, though spared once
        # Past the bound (10,000 more) for 3 full collections, then traversed again.
        assert highest < start + 10_000 + 5 * 1_000, (start, highest)
        gc.collect()
        assert gc.get_freeze_count() >= start  # what was alive is spared again
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_spared_objects_past_the_bound_for_fewer_collections_are_not_traversed() -> None:
    automatic = gc.isenabled()
    gc.disable()
    start = allocator.freeze_started_process()
    stop = allocator.freeze_survivors(growth=2, floor=0, steady=3)
    try:
        cycle = _Cycle()
        marker = weakref.ref(cycle)
        gc.collect()
        del cycle  # garbage among the spared: freed only by a full traversal
        for _ in range(4):  # a state being replaced, twice the size for 2 collections
            doubled = [[i] for i in range(start + 1_000)]
            gc.collect()
            gc.collect()
            del doubled
            gc.collect()
        assert marker() is not None  # never traversed again
        doubled = [[i] for i in range(start + 1_000)]
        for _ in range(4):  # for 3 collections in a row, then at the next
            gc.collect()
        del doubled
        assert marker() is None
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_the_bound_follows_the_spared_objects_down_when_they_are_freed() -> None:
    automatic = gc.isenabled()
    gc.disable()
    state = [[i] for i in range(200_000)]  # alive when the process started: spared ...
    allocator.freeze_started_process()
    stop = allocator.freeze_survivors(growth=2, floor=0, steady=1)
    try:
        del state  # ... then freed by reference counting: fewer spared
        low = gc.get_freeze_count()
        gc.collect()
        cycles = [_Cycle() for _ in range(low + 1_000)]  # more than were spared
        first = weakref.ref(cycles[0])
        gc.collect()
        del cycles
        gc.collect()  # spared ones doubled since the low mark: all traversed again
        assert first() is None
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_a_thaw_the_predicate_refuses_is_deferred_until_it_allows() -> None:
    automatic = gc.isenabled()
    gc.disable()
    start = allocator.freeze_started_process()
    allowed = [False]
    asked: list[bool] = []

    def may_thaw() -> bool:
        asked.append(allowed[0])
        return allowed[0]

    stop = allocator.freeze_survivors(growth=2, floor=0, steady=1, may_thaw=may_thaw)
    try:
        cycle = _Cycle()
        marker = weakref.ref(cycle)
        doubled = [[i] for i in range(start + 1_000)]  # twice the spared, for good
        gc.collect()  # past the bound once: the next full collection would traverse them
        del cycle  # garbage among the spared: freed only by a full traversal
        for _ in range(3):  # refused: deferred, and asked again at each full collection
            gc.collect()
            assert marker() is not None
            assert gc.get_freeze_count() > start
        assert asked == [False, False, False]
        allowed[0] = True
        gc.collect()
        assert marker() is None
        assert asked == [False, False, False, True]
        gc.collect()  # traversed: the bound starts again from what is alive
        assert asked == [False, False, False, True]
        assert len(doubled) == start + 1_000
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_a_deferred_thaw_far_past_the_bound_asks_to_be_relieved() -> None:
    automatic = gc.isenabled()
    gc.disable()
    start = allocator.freeze_started_process()
    calls: list[tuple[bool, int]] = []
    stop = allocator.freeze_survivors(
        growth=2, floor=0, steady=1, far=2, may_thaw=lambda: False,
        due=lambda overdue: calls.append((overdue, gc.get_freeze_count())))
    try:
        gc.collect()
        assert calls == []  # not past the bound: nothing due
        kept = [[i] for i in range(start + 1_000)]  # twice the spared: past the bound
        gc.collect()
        assert [overdue for overdue, _ in calls] == [False]  # due at the next one
        gc.collect()  # deferred once, but not far past the bound (three times)
        assert [overdue for overdue, _ in calls] == [False, False]
        kept.append([[i] for i in range(start + 1_000)])  # three times and more
        gc.collect()
        assert calls[-1][0] and calls[-1][1] >= 3 * start
        gc.collect()  # told again while it stays deferred
        assert [overdue for overdue, _ in calls] == [False, False, True, True]
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


def test_a_thaw_that_may_run_is_never_overdue() -> None:
    automatic = gc.isenabled()
    gc.disable()
    start = allocator.freeze_started_process()
    calls: list[bool] = []
    stop = allocator.freeze_survivors(growth=2, floor=0, steady=1, far=1, due=calls.append)
    try:
        kept = [[i] for i in range(4 * start)]
        for _ in range(4):  # due, traversed, then within the new bound
            gc.collect()
        assert calls == [False] and len(kept) == 4 * start
    finally:
        stop()
        gc.unfreeze()
        if automatic:
            gc.enable()


@pytest.mark.parametrize("options", [{"may_thaw": True}, {"due": "later"}])
def test_hooks_that_are_no_functions_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(TypeError, match=r"freeze_survivors: (may_thaw|due) must be a "):
        allocator.freeze_survivors(**options)  # type: ignore[arg-type]
    assert not any(getattr(c, "__name__", "") == "after" for c in gc.callbacks)


@pytest.mark.parametrize("options", [{"growth": 0}, {"growth": 1.5}, {"growth": True},
                                     {"floor": -1}, {"floor": "many"}, {"steady": 0},
                                     {"far": 0}])
def test_bad_thaw_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"freeze_survivors: (growth|floor|steady|far) must be"):
        allocator.freeze_survivors(**options)  # type: ignore[arg-type]
    assert not any(getattr(c, "__name__", "") == "after" for c in gc.callbacks)


#: Run in a process of its own: how much a trim gives back depends on the heap's history
#: (a test process that ran hundreds of tests before may reuse pages it holds already).
FREED_PAGES = """
from lazily_queue import allocator

def rss_kb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))

# Freed 20 kB blocks between kept 1 kB ones: free heap pages glibc keeps mapped.
kept, freed = [], []
for i in range(2000):
    freed.append(bytes(20_000 + i))
    kept.append(bytes(1_000 + i))
del freed
before = rss_kb()
assert allocator.release_free_memory()
after = rss_kb()
assert len(kept) == 2000
print(before, after)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_heap_pages_go_back_to_the_system() -> None:
    done = subprocess.run([sys.executable, "-c", FREED_PAGES], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    assert after < before - 16_000, (before, after)


async def test_a_node_service_releases_memory_once_after_each_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(allocator, "release_free_memory", lambda: calls.append(1) or True)
    monkeypatch.setattr(allocator, "CHECK_INTERVAL", 0.02)
    monkeypatch.setenv("LAZILY_TRIM_SECRET", "trim-secret")
    config = parse_config({"id": 1, "data_dir": "d1", "durability": "none",
                           "secret_env": "LAZILY_TRIM_SECRET",
                           "peers": {"1": f"unix:{tmp_path}/n1.sock"}}, base=tmp_path)
    service = NodeService(config, out=io.StringIO(), handle_signals=False)
    task = asyncio.create_task(service.run())
    try:
        async with asyncio.timeout(20):
            while not (service.node is not None  # noqa: ASYNC110 - polls plain state
                       and service.node.running and service.node.is_leader):
                await asyncio.sleep(0.02)
            node = service.node
            queue = node.queue("q")
            replica = node.driver.replica
            for expected in (1, 2):
                await queue.push(expected)
                replica.engine.force_compaction()
                while replica.snapshots.taken < expected:
                    await queue.push("more")  # each step gives the engine a tick
                while len(calls) < expected:  # noqa: ASYNC110 - polls a counter
                    await asyncio.sleep(0.02)
                assert len(calls) == expected
    finally:
        service.request_stop()
        assert await task == 0



FROZEN_APP = """
import gc
from pathlib import Path


async def main(node, options):
    started = gc.get_freeze_count()
    kept = [[i] for i in range(20_000)]  # 20,000 tracked lists, alive at the collection
    gc.collect()
    Path(options["out"]).write_text(f"{started} {gc.get_freeze_count() - started} {len(kept)}")
"""


def test_a_node_process_spares_the_collector_what_it_held_when_started(
    tmp_path: Path,
) -> None:
    """Full collections in ``lazily-queue node`` do not traverse the modules and state
    the process held once its node started, nor what survived an earlier one."""
    from .node_procs import NodeProc, unix_peers, wait_for, write_config

    (tmp_path / "frozenapp.py").write_text(FROZEN_APP)
    out = tmp_path / "frozen.txt"
    config = write_config(tmp_path / "n1.toml", 1, unix_peers(tmp_path, (1,)),
                          app=f'entry = "frozenapp:main"\nout = "{out}"')
    proc = NodeProc(config, cwd=tmp_path)
    try:
        proc.wait_ready()
        text = wait_for(lambda: out.exists() and out.read_text(), what="the app")
        frozen, survivors, _ = map(int, text.split())
        assert frozen > 10_000, frozen
        assert survivors >= 20_000, survivors
    finally:
        assert proc.terminate() == 0, proc.stderr()

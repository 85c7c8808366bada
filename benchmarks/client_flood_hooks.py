"""Timestamps of the probe's push inside each node of a traced client flood
(:mod:`benchmarks.client_flood_trace`), and how the nodes' event loops spent the run.

Installed before the package is imported (:mod:`benchmarks.flood_trace`'s
``sitecustomize``), each hook wraps a method once its module is loaded. Events are JSON
lines ``{"e": kind, "t": time.monotonic(), ...}`` in ``trace-<pid>.jsonl``: the clock is
the machine's, so the runner lines them up with the probe's own. A probe op is an op on
queue ``probe`` (its entry is the one holding ``b"probe"``; a flood op's holds
``b"flood"``). Leader: ``rx`` (its bytes read off the socket), ``read`` (its frame
decoded), ``append`` (its entry in the log, with the flood ops not applied ahead of it),
``ack`` (a follower's match index reached it), ``apply0``/``applied``, ``answer`` (its
result handed to its link), ``write`` (the link writes it); follower: ``f_append``,
``f_ack`` (its acknowledgement released, after the fsync). Every 2 s and at exit a
``stats`` line: each loop iteration's busy time (not waiting in ``select``), the
callbacks that took the most time, the process's ``/proc/self/schedstat`` and each of
its threads', the machine's steal time (``/proc/stat``, jiffies), and each iteration
since the last such line (its busy time and the loop thread's CPU time).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import importlib.abc
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

_now = time.monotonic
_cpu = time.thread_time
_state: dict[str, Any] = {"file": None, "replica": None, "leader_idx": {}, "follower_idx": []}
_busy: list[float] = []
#: ``[wall ms, loop thread CPU ms]`` of each iteration since the last ``stats`` line.
_iterations: list[list[float]] = []
#: Per callback: calls, busy seconds, longest busy, loop thread CPU seconds, most CPU.
_callbacks: collections.defaultdict[str, list[float]] = collections.defaultdict(
    lambda: [0, 0.0, 0.0, 0.0, 0.0])


#: Answers sent by kind of link (the probe's, others) and how (at once, batched).
_answers: collections.Counter[tuple[str, str]] = collections.Counter()

#: Per timed section of a callback (:func:`_timed`): calls, CPU seconds, most CPU, calls
#: of more than 2 ms CPU.
_sections: collections.defaultdict[str, list[float]] = collections.defaultdict(
    lambda: [0, 0.0, 0.0, 0])


def _timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with its loop thread CPU time counted under ``name``."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        cpu = _cpu()
        try:
            return func(*args, **kwargs)
        finally:
            used = _cpu() - cpu
            entry = _sections[name]
            entry[0] += 1
            entry[1] += used
            entry[2] = max(entry[2], used)
            entry[3] += used > 0.002

    return timed


def event(kind: str, **fields: Any) -> None:
    fields["e"], fields["t"] = kind, _now()
    _state["file"].write(json.dumps(fields) + "\n")


def install(directory: str) -> None:
    """Trace this node into ``directory``."""
    _state["file"] = open(os.path.join(directory, f"trace-{os.getpid()}.jsonl"), "w")
    atexit.register(dump)
    hooks: dict[str, Callable[[Any], None]] = {
        "lazily_queue.client.server": _server, "lazily_queue.client.connection": _conn,
        "lazily_queue.raft.replica": _replica, "lazily_queue.raft.journal": _journal,
        "lazily_queue.raft.driver": _driver, "lazily_queue.raft.adapters": _adapters,
        "lazily_queue.replicated.state_machine": _state_machine,
        "lazily_transports.sockets": _sockets}
    sys.meta_path.insert(0, _Finder(hooks))
    _loop()


class _Finder(importlib.abc.MetaPathFinder):
    """Runs a hook on a module once it is executed."""

    def __init__(self, hooks: dict[str, Callable[[Any], None]]) -> None:
        self.hooks = hooks

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        hook = self.hooks.pop(name, None)
        if hook is None:
            return None
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None:
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            hook(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def dump() -> None:
    busy = sorted(_busy)
    top = sorted(_callbacks.items(), key=lambda kv: -kv[1][3])[:12]
    window = [[round(wall, 3), round(cpu, 3)] for wall, cpu in _iterations]
    _iterations.clear()
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as stat:
                threads[tid] = stat.read().split()
        except OSError:
            continue
    with open("/proc/stat") as stat:
        steal = stat.readline().split()[8]
    event("stats", sched=open("/proc/self/schedstat").read().split(), iterations_ms=window,
          threads=threads, steal=steal,
          answers=[[*key, count] for key, count in sorted(_answers.items())],
          busy_ms=[round(busy[int(len(busy) * q)] * 1000, 3) for q in (0.5, 0.9, 0.99)]
          if busy else None, busy_s=round(sum(busy), 3), iterations=len(busy),
          sections=[[name, n, round(cpu, 3), round(most * 1000, 2), over]
                    for name, (n, cpu, most, over) in _sections.items()],
          callbacks=[[name, n, round(total, 3), round(most * 1000, 2), round(cpu, 3),
                      round(most_cpu * 1000, 2)]
                     for name, (n, total, most, cpu, most_cpu) in top])
    _state["file"].flush()


def _callback_name(func: Any) -> str:
    """A callback's name; a task's step or wake-up is named by its coroutine."""
    name = getattr(func, "__qualname__", type(func).__name__)
    task = getattr(func, "__self__", None)
    coro = getattr(task, "get_coro", lambda: None)()
    if coro is not None:
        return f"{name} ({getattr(coro, '__qualname__', type(coro).__name__)})"
    return name


def _loop() -> None:
    import asyncio.base_events as base
    import asyncio.events as events
    import selectors

    run_handle = events.Handle._run
    waited = [0.0]

    def _run(self: Any) -> None:
        started, cpu = _now(), _cpu()
        run_handle(self)
        took, used = _now() - started, _cpu() - cpu
        func = getattr(self._callback, "__func__", self._callback)
        entry = _callbacks[_callback_name(func)]
        entry[0] += 1
        entry[1] += took
        entry[2] = max(entry[2], took)
        entry[3] += used
        entry[4] = max(entry[4], used)

    select = selectors.EpollSelector.select

    def _select(self: Any, timeout: float | None = None) -> Any:
        started = _now()
        try:
            return select(self, timeout)
        finally:
            waited[0] += _now() - started

    run_once = base.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def _run_once(self: Any) -> None:
        waited[0] = 0.0
        started, cpu = _now(), _cpu()
        run_once(self)
        busy = _now() - started - waited[0]
        _busy.append(busy)
        _iterations.append([busy * 1000, (_cpu() - cpu) * 1000])

    events.Handle._run = _run  # type: ignore[method-assign]
    selectors.EpollSelector.select = _select  # type: ignore[method-assign]
    base.BaseEventLoop._run_once = _run_once  # type: ignore[attr-defined]


def _is_probe(request: list[Any]) -> bool:
    return len(request) == 7 and isinstance(request[5], list) and request[5][:1] == ["probe"]


def _server(module: Any) -> None:
    requests = module.ClientServer._requests

    def _requests(self: Any, conn: Any, frame: Any, data: bytes) -> Any:
        items = requests(self, conn, frame, data)
        for item in items:
            if _is_probe(item):
                conn.probe = True
                event("read", seq=item[2])
        return items

    module.ClientServer._requests = _requests
    take = module.FramesInHand.take

    async def _take(self: Any, conn: Any, size: int, ended: Any) -> bool:
        client = conn.grant.name
        if getattr(conn, "probe", False) and (client in self._waiting
                                              or not self._fits(client, size)):
            event("hand_wait", held=self.held.get(client, 0))
        return await take(self, conn, size, ended)

    module.FramesInHand.take = _take
    answer = module.ClientServer._answer

    def _answer(self: Any, conn: Any, rid: int, result: Any, error: Any) -> None:
        if getattr(conn, "probe", False):
            event("answer")
        answer(self, conn, rid, result, error)

    module.ClientServer._answer = _answer


def _sockets(module: Any) -> None:
    received = module.SocketChannel.data_received

    def data_received(self: Any, data: bytes) -> None:
        if b"probe" in data:
            event("rx")
        received(self, data)

    module.SocketChannel.data_received = data_received


def _conn(module: Any) -> None:
    write = module.ClientConnection._write

    def _write(self: Any, frames: list[Any], *, paced: bool = False) -> None:
        if getattr(self, "probe", False):
            event("write")
        write(self, frames, paced=paced)

    module.ClientConnection._write = _write
    send_answer = getattr(module.ClientConnection, "send_answer", None)
    if send_answer is None:
        return

    def _send_answer(self: Any, frame: list[Any]) -> None:
        at_once = not (self.slots.used or self._pending)
        _answers["probe" if getattr(self, "probe", False) else "other",
                 "at once" if at_once else "batched"] += 1
        send_answer(self, frame)

    module.ClientConnection.send_answer = _send_answer


def _replica(module: Any) -> None:
    init, receive = module.Replica.__init__, module.Replica.receive

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _state["replica"] = self

    def _receive(self: Any, peer: str, message: dict[str, Any]) -> None:
        waiting = _state["leader_idx"]
        if waiting and message.get("type") == "next_node_idx" and message.get("success"):
            match = message["next_node_idx"] - 1
            for index, peers in list(waiting.items()):
                if match >= index and peer not in peers:
                    peers.add(peer)
                    event("ack", idx=index, peer=peer)
                    if len(peers) >= 2:
                        del waiting[index]
        receive(self, peer, message)

    module.Replica.__init__ = __init__
    module.Replica.receive = _receive


def _journal(module: Any) -> None:
    add = module.DurableJournal.add

    def _add(self: Any, command: bytes, idx: int, term: int) -> None:
        add(self, command, idx, term)
        replica = _state["replica"]
        if b"probe" not in command or replica is None:
            return
        engine = replica.engine
        if not engine.is_leader:
            event("f_append", idx=idx)
            _state["follower_idx"].append(idx)
            return
        entries, applied = self._entries, engine.last_applied
        first = entries[0][1]
        ahead = [entries[i - first][0] for i in range(max(applied + 1, first), idx)]
        event("append", idx=idx, ahead_entries=len(ahead),
              ahead_flood=sum(entry.count(b"flood") for entry in ahead))
        _state["leader_idx"][idx] = set()

    module.DurableJournal.add = _add


def _driver(module: Any) -> None:
    start, dispatch = module.Driver.start, module.Driver._dispatch

    async def _start(self: Any) -> None:
        await start(self)
        loop = asyncio.get_running_loop()

        def every() -> None:
            dump()
            loop.call_later(2.0, every)

        loop.call_later(2.0, every)

    def _dispatch(self: Any, ready: Any) -> None:
        waiting = _state["follower_idx"]
        if waiting:
            for messages in ready.messages.values():
                for message in messages:
                    if message.get("type") == "next_node_idx" and message.get("success"):
                        while waiting and waiting[0] <= message["next_node_idx"] - 1:
                            event("f_ack", idx=waiting.pop(0))
        dispatch(self, ready)

    module.Driver.start = _start
    module.Driver._dispatch = _dispatch
    module.Driver._on_frame = _timed("raft frame read", module.Driver._on_frame)
    module.Driver._step = _timed("step", module.Driver._step)


def _adapters(module: Any) -> None:
    wrap = module.wrap_application

    def wrap_application(engine: Any, *args: Any) -> None:
        wrap(engine, *args)
        engine._SyncObj__applyLogEntries = _timed("apply (tick)", engine._SyncObj__applyLogEntries)
        engine.apply_committed = _timed("apply (light tick)", engine.apply_committed)

    module.wrap_application = wrap_application


def _state_machine(module: Any) -> None:
    apply = module.StateMachine.apply

    def _apply(self: Any, payload: bytes, stamp: int) -> Any:
        probe = b"probe" in payload
        if probe:
            event("apply0")
        result = apply(self, payload, stamp)
        if probe:
            event("applied", flood=payload.count(b"flood"))
        return result

    module.StateMachine.apply = _apply

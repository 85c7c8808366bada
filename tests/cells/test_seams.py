"""The storage seams: every backend implements its family's protocol without raising,
capabilities are declared (and checked), and the shells reach into no other object's
private fields."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import lazily_queue
from lazily_queue import QueueCell, QueuePopError, QueuePushError, VecDequeStorage
from lazily_queue.core.fifo import Fifo
from lazily_queue.core.queue import HEAD, IS_EMPTY, IS_FULL, LEN, pop_mask, push_mask
from lazily_queue.reactive import Context
from lazily_queue.storage import (
    LocalTopicStorage,
    LocalWorkQueueStorage,
    StorageCapabilities,
)
from lazily_queue.storage import queue as queue_seam
from lazily_queue.storage import topic as topic_seam
from lazily_queue.storage import work as work_seam
from lazily_queue.storage.raft_queue import RaftQueueStorage
from lazily_queue.storage.raft_topic import RaftTopicStorage
from lazily_queue.storage.raft_work_queue import RaftWorkQueueStorage
from lazily_queue.storage.remote import (
    RemoteQueueStorage,
    RemoteTopicStorage,
    RemoteWorkQueueStorage,
)

PACKAGE = Path(lazily_queue.__path__[0])

FAMILIES: list[tuple[Any, Any, list[type]]] = [
    (queue_seam, queue_seam.QueueStorage,
     [VecDequeStorage, RaftQueueStorage, RemoteQueueStorage]),
    (topic_seam, topic_seam.TopicStorage,
     [LocalTopicStorage, RaftTopicStorage, RemoteTopicStorage]),
    (work_seam, work_seam.WorkQueueStorage,
     [LocalWorkQueueStorage, RaftWorkQueueStorage, RemoteWorkQueueStorage]),
]


def _protocol_methods(protocol: Any) -> set[str]:
    return {
        name for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    }


@pytest.mark.parametrize(("seam", "protocol", "backends"), FAMILIES,
                         ids=["queue", "topic", "work_queue"])
def test_every_backend_implements_every_required_method(
    seam: Any, protocol: Any, backends: list[type]
) -> None:
    required = _protocol_methods(protocol) - {"capabilities", "visibility_timeout",
                                              "lease_seconds", "max_deliveries"}
    assert set(seam.REQUIRED) == required  # the runtime check lists the protocol exactly
    for backend in backends:
        assert isinstance(backend.capabilities, StorageCapabilities), backend  # type: ignore[attr-defined]
        for name in seam.REQUIRED:
            method = getattr(backend, name)
            source = inspect.getsource(method)
            assert "raise" not in source, f"{backend.__name__}.{name} raises"
            awaitable = inspect.iscoroutinefunction(getattr(protocol, name))
            assert inspect.iscoroutinefunction(method) is awaitable, f"{backend.__name__}.{name}"
        caps = backend.capabilities  # type: ignore[attr-defined]
        for flag, methods in seam.CAPABILITY_METHODS.items():
            if getattr(caps, flag):
                assert all(callable(getattr(backend, m, None)) for m in methods), (backend, flag)


def test_raft_storages_declare_no_synchronous_surface() -> None:
    for backend in (RaftQueueStorage, RaftTopicStorage, RaftWorkQueueStorage,
                    RemoteQueueStorage, RemoteTopicStorage, RemoteWorkQueueStorage):
        assert not backend.capabilities.sync and backend.capabilities.observable
        assert not hasattr(backend, "try_push") and not hasattr(backend, "try_publish")


def test_an_async_queue_backend_must_report_its_transitions() -> None:
    class Silent:
        capabilities = StorageCapabilities()

        def len(self) -> int:
            return 0

        def is_closed(self) -> bool:
            return False

        def capacity(self) -> None:
            return None

        async def offer(self, value: Any, *, timeout: float | None = None) -> None:
            return None

        async def poll(self, *, timeout: float | None = None) -> Any:
            return QueuePopError.Empty

        async def close(self, *, timeout: float | None = None) -> None:
            return None

        async def poll_many(self, n: int, *, timeout: float | None = None) -> Any:
            return QueuePopError.Empty

        async def unpoll(self, values: list[Any], *, timeout: float | None = None) -> None:
            return None

    with pytest.raises(TypeError, match="neither 'sync' nor 'observable'"):
        QueueCell(Silent(), context=Context())

    class Boasting(VecDequeStorage[Any]):
        __slots__ = ()
        capabilities = StorageCapabilities(sync=True, observable=True)

    with pytest.raises(TypeError, match="declares the 'observable' capability but has no "
                                        r"set_change_listener\(\)"):
        QueueCell(Boasting(), context=Context())


@pytest.mark.parametrize("capacity", [None, 1, 2, 3])
def test_fifo_reporting_ops_report_the_invalidation_table(capacity: int | None) -> None:
    fifo: Fifo[int] = Fifo(capacity)
    reports: list[int] = []
    ops = fifo.reporting_ops(reports.append)
    expected: list[int] = []
    for i in range(4):
        pre = fifo.len()
        outcome = ops.try_push(i)
        if capacity is not None and pre >= capacity:
            assert outcome is QueuePushError.Full
        else:
            assert outcome is None
            expected.append(push_mask(pre, capacity))
    while fifo.len():
        pre = fifo.len()
        ops.try_pop()
        expected.append(pop_mask(pre, capacity))
    assert ops.try_pop() is QueuePopError.Empty
    fifo.try_close()
    assert ops.try_push(9) is QueuePushError.Closed and ops.try_pop() is QueuePopError.Closed
    assert reports == expected
    assert reports[0] & (HEAD | LEN | IS_EMPTY) == HEAD | LEN | IS_EMPTY
    assert any(m & IS_FULL for m in reports) is (capacity is not None)


def test_push_front_returns_an_element_to_the_head() -> None:
    fifo: Fifo[str] = Fifo(1, ["b"])
    fifo.try_close()
    fifo.push_front("a")  # no capacity or closed check: the element was in the queue
    assert fifo.elements() == ["a", "b"]


def _is_super(value: ast.expr) -> bool:
    """``super()``: an override extending its own inherited member."""
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id == "super")


def _private_reaches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and not _is_super(node.value)):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_cells_storages_and_the_state_machine_touch_only_their_own_private_fields() -> None:
    paths = [p for folder in ("cells", "storage", "replicated")
             for p in sorted((PACKAGE / folder).glob("*.py"))]
    paths += [PACKAGE / "core" / "fifo.py", PACKAGE / "threads.py"]
    assert [reach for p in paths for reach in _private_reaches(p)] == []

"""Per-context isolation (spec §1.6): nodes bind to one context; a context is used from
one thread; a consumer never depends on another context's node.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import pytest

from lazily_queue.reactive import (
    Computed,
    Context,
    Effect,
    ReactiveContextError,
    Slot,
    SlotGroup,
    Source,
    default_context,
    resolve_context,
)


def reading(*nodes: Any) -> Callable[[], None]:
    def body() -> None:
        for node in nodes:
            node.get()

    return body


def test_two_contexts_batch_and_flush_independently() -> None:
    a, b = Context(name="a"), Context(name="b")
    sa, sb = Source(0, context=a), Source(0, context=b)
    seen_a: list[int] = []
    seen_b: list[int] = []
    Effect(lambda: seen_a.append(sa.get()), context=a)
    Effect(lambda: seen_b.append(sb.get()), context=b)
    with a.batch():
        sa.set(1)
        sb.set(1)  # b is not batched: flushes now
        assert seen_b == [0, 1] and seen_a == [0]
        assert a.in_batch and not b.in_batch
    assert seen_a == [0, 1]


@pytest.mark.parametrize("kind", ["source", "computed", "slot", "group-slot"])
def test_computed_reading_another_contexts_node_raises(kind: str) -> None:
    a, b = Context(name="ctx-a"), Context(name="ctx-b")
    node: Any
    if kind == "source":
        node = Source(1, context=b, name="foreign")
    elif kind == "computed":
        inner = Source(1, context=b)
        node = Computed(lambda: inner.get(), context=b, name="foreign")
    elif kind == "slot":
        node = Slot(lambda: 1, context=b, name="foreign")
    else:
        node = SlotGroup(b).slot(lambda: 1, name="foreign")
    c = Computed(lambda: node.get() + 1, context=a)
    with pytest.raises(ReactiveContextError, match=r"foreign.*'ctx-b'.*'ctx-a'"):
        c.get()
    assert not node._observers
    assert a._observer is None and b._observer is None


def test_effect_reading_another_contexts_node_raises_and_is_disposed() -> None:
    a, b = Context(name="a"), Context(name="b")
    foreign = Source(1, context=b)
    with pytest.raises(ReactiveContextError):
        Effect(reading(foreign), context=a)
    assert not foreign._observers

    local = Source(0, context=a)
    seen: list[int] = []

    def sometimes_foreign() -> None:
        seen.append(local.get())
        if local.peek() == 1:
            foreign.get()

    eff = Effect(sometimes_foreign, context=a)
    with pytest.raises(ReactiveContextError):
        local.set(1)
    local.set(2)
    assert seen == [0, 1, 2] and not eff.disposed


def test_peek_is_an_explicit_untracked_cross_context_read() -> None:
    a, b = Context(name="a"), Context(name="b")
    sb = Source(5, context=b)
    cb = Computed(lambda: sb.get() * 2, context=b)
    ca = Computed(lambda: sb.peek() + cb.peek(), context=a)
    assert ca.get() == 15
    assert not sb._observers and not cb._observers


def test_untracked_block_and_foreign_read_inside_it() -> None:
    a, b = Context(name="a"), Context(name="b")
    local = Source(1, context=a)
    other = Source(2, context=a)
    foreign = Source(3, context=b)

    def body() -> int:
        with a.untracked():
            hidden = other.get()  # own context, untracked: allowed, no edge
        return local.get() + hidden

    c = Computed(body, context=a)
    seen: list[int] = []
    Effect(lambda: seen.append(c.get()), context=a)
    assert set(c._sources) == {local}
    other.set(20)
    assert seen == [3]

    def sneaky() -> int:
        with a.untracked():
            return foreign.get()

    with pytest.raises(ReactiveContextError):
        Computed(sneaky, context=a).get()


def test_nodes_of_another_context_may_be_created_and_written_inside_a_run() -> None:
    a, b = Context(name="a"), Context(name="b")
    trigger = Source(0, context=a)
    target = Source(0, context=b)
    seen_b: list[int] = []
    Effect(lambda: seen_b.append(target.get()), context=b)
    inner: list[Effect] = []

    def bridge() -> None:
        v = trigger.get()
        target.set(v)  # writing is not reading: allowed
        if v == 1:
            inner.append(Effect(reading(target), context=b))

    Effect(bridge, context=a)
    trigger.set(1)
    assert seen_b == [0, 1] and len(inner) == 1 and inner[0] in target._observers


def test_default_context_is_per_thread_and_resolve_context() -> None:
    main = default_context()
    assert default_context() is main
    explicit = Context(name="x")
    assert resolve_context(None) is main and resolve_context(explicit) is explicit
    box: dict[str, Any] = {}

    def worker() -> None:
        box["ctx"] = default_context()
        box["again"] = default_context()
        s = Source(1)
        c = Computed(lambda: s.get() + 1)
        box["value"] = c.get()
        box["node_ctx"] = s.ctx

    t = threading.Thread(target=worker, name="reactive-worker")
    t.start()
    t.join()
    assert box["ctx"] is box["again"] is box["node_ctx"]
    assert box["ctx"] is not main
    assert "reactive-worker" in box["ctx"].name
    assert box["value"] == 2


def test_foreign_read_check_is_per_thread() -> None:
    # A consumer computing in one thread must not make another thread's untracked
    # reads (of its own context) look foreign.
    a, b = Context(name="thread-a"), Context(name="thread-b")
    sa = Source(1, context=a)
    sb = Source(2, context=b)
    inside = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def slow() -> int:
        inside.set()
        release.wait(5)
        return sa.get()

    def worker() -> None:
        try:
            assert Computed(slow, context=a).get() == 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    assert inside.wait(5)
    try:
        assert sb.get() == 2  # main thread, nothing computing here
        assert Computed(lambda: sb.get() * 2, context=b).get() == 4
    finally:
        release.set()
        t.join(5)
    assert not errors


def test_contexts_do_not_share_write_epochs_or_pending() -> None:
    a, b = Context(name="a"), Context(name="b")
    sa = Source(0, context=a)
    ca = Computed(lambda: sa.get() + 1, context=a)
    assert ca.get() == 1
    epoch = a._write_epoch
    sb = Source(0, context=b)
    for i in range(3):
        sb.set(i + 1)
    assert a._write_epoch == epoch
    calls: list[int] = []
    orig = ca._fn

    def counted() -> int:
        calls.append(1)
        return orig()

    ca._fn = counted
    assert ca.get() == 1 and calls == [], "writes elsewhere do not invalidate this context"


def test_single_context_process_skips_registration_until_a_second_context() -> None:
    # In a fresh process: with one Context no read can cross contexts, so runs do not
    # register for the check; once a second Context exists the check is live.
    script = textwrap.dedent(
        """
        from lazily_queue.reactive import Computed, Context, ReactiveContextError, Source
        from lazily_queue.reactive import nodes

        a = Context(name="only")
        s = Source(1, context=a)
        inside = []
        c = Computed(lambda: inside.append(dict(nodes.running)) or s.get(), context=a)
        assert c.get() == 1 and inside == [{}], inside
        b = Context(name="second")
        foreign = Source(2, context=b)
        d = Computed(lambda: foreign.get(), context=a)
        try:
            d.get()
        except ReactiveContextError:
            print("raised")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "raised"

"""Property tests: random DAGs of sources and computeds against a from-scratch model.

Each example draws a DAG (sources, computeds that sum their inputs modulo a small
number, pick a branch by a condition, or raise on one input value, so equal recomputes,
dynamic edges and errors are frequent), some effects (which catch errors of what they
read), and a sequence of writes, nested batches (with reads inside), reads, effect
creation and disposal. After every step:

* every value read (by the test or by an effect) equals the from-scratch model, an
  error included;
* each live effect ran exactly once if a value it read last time changed, and not at
  all if none did and no source it reads directly was written (a write that is undone
  inside one batch moves the source's version, so it may rerun a direct reader; an
  error that stays an error may rerun it too: errors are not cached);
* no computed recomputes without a read: only nodes linked to an effect (before or
  after the step) may recompute during a write, and a read recomputes only nodes in
  the read node's cone, each at most once (unless it fails);
* the edges are consistent both ways, a computed is linked exactly while an effect
  reaches it, and disposed effects hold and are held by nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lazily_queue.reactive import Computed, Context, Effect, Source

EXAMPLES = int(os.environ.get("LAZILY_REACTIVE_EXAMPLES", "150"))
VALUES = st.integers(0, 3)
ERR = "error"  # the model's value of a node whose read raises
TRIP = 3  # a "guard" computed raises GuardError when its input has this value


class GuardError(Exception):
    pass


def read(node: Any) -> Any:
    try:
        return node.get()
    except GuardError:
        return ERR


@dataclass(frozen=True)
class CompSpec:
    kind: str  # "sum": sum(deps) % mod | "branch": deps = (cond, even, odd) | "guard"
    deps: tuple[int, ...]
    mod: int = 3


@dataclass(frozen=True)
class EffSpec:
    kind: str  # "reads": read every dep | "branch": deps = (cond, even, odd)
    deps: tuple[int, ...]


@st.composite
def comp_specs(draw: st.DrawFn, available: int) -> CompSpec:
    node = st.integers(0, available - 1)
    kind = draw(st.sampled_from(["sum", "sum", "branch", "branch", "guard"]))
    if kind == "sum":
        deps = tuple(draw(st.lists(node, min_size=1, max_size=3)))
        return CompSpec("sum", deps, draw(st.integers(2, 4)))
    if kind == "guard":
        return CompSpec("guard", (draw(node),))
    return CompSpec("branch", (draw(node), draw(node), draw(node)))


@st.composite
def eff_specs(draw: st.DrawFn, n_nodes: int) -> EffSpec:
    node = st.integers(0, n_nodes - 1)
    if draw(st.booleans()):
        return EffSpec("reads", tuple(draw(st.lists(node, min_size=1, max_size=3))))
    return EffSpec("branch", (draw(node), draw(node), draw(node)))


def batch_items(n_src: int, n_nodes: int, depth: int) -> st.SearchStrategy[Any]:
    write = st.tuples(st.just("set"), st.integers(0, n_src - 1), VALUES)
    read = st.tuples(st.just("read"), st.integers(0, n_nodes - 1))
    leaf = st.one_of(write, write, read)
    if depth == 0:
        return leaf
    nested = st.tuples(
        st.just("batch"), st.booleans(), st.lists(batch_items(n_src, n_nodes, depth - 1),
                                                  max_size=4)
    )
    return st.one_of(leaf, leaf, nested)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[int, list[CompSpec], list[EffSpec], list[Any]]:
    n_src = draw(st.integers(1, 4))
    n_comp = draw(st.integers(1, 6))
    comps = [draw(comp_specs(n_src + j)) for j in range(n_comp)]
    n_nodes = n_src + n_comp
    effects = draw(st.lists(eff_specs(n_nodes), max_size=3))
    op = st.one_of(
        st.tuples(st.just("set"), st.integers(0, n_src - 1), VALUES),
        st.tuples(st.just("set"), st.integers(0, n_src - 1), VALUES),
        st.tuples(st.just("batch"), st.booleans(), st.lists(
            batch_items(n_src, n_nodes, 1), max_size=5)),
        st.tuples(st.just("read"), st.integers(0, n_nodes - 1)),
        st.tuples(st.just("spawn"), eff_specs(n_nodes)),
        st.tuples(st.just("dispose"), st.integers(0, 7)),
    )
    ops = draw(st.lists(op, max_size=25))
    return n_src, comps, effects, ops


@dataclass
class World:
    n_src: int
    comps: list[CompSpec]
    ctx: Context = field(default_factory=lambda: Context(name="model"))
    env: list[int] = field(default_factory=list)
    nodes: list[Any] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    effects: list[Effect] = field(default_factory=list)
    specs: list[EffSpec] = field(default_factory=list)
    logs: list[list[dict[int, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = [0] * self.n_src
        self.nodes = [Source(0, context=self.ctx, name=f"s{i}") for i in range(self.n_src)]
        self.calls = [0] * len(self.comps)
        for j, spec in enumerate(self.comps):
            self.nodes.append(Computed(self._body(j, spec), context=self.ctx, name=f"c{j}"))

    # -- the system under test ------------------------------------------------------------

    def _body(self, j: int, spec: CompSpec) -> Any:
        nodes = self.nodes

        def body() -> int:
            self.calls[j] += 1
            if spec.kind == "sum":
                total: int = sum(nodes[d].get() for d in spec.deps)
                return total % spec.mod
            if spec.kind == "guard":
                value: int = nodes[spec.deps[0]].get()
                if value == TRIP:
                    raise GuardError(f"c{j}")
                return value
            cond, even, odd = spec.deps
            if nodes[cond].get() % 2 == 0:
                picked: int = nodes[even].get()
                return picked
            return (int(nodes[odd].get()) + 1) % 5

        return body

    def spawn(self, spec: EffSpec) -> None:
        index = len(self.effects)
        self.logs.append([])
        self.specs.append(spec)
        nodes = self.nodes
        log = self.logs[index]

        def body() -> None:
            seen: dict[int, Any] = {}
            if spec.kind == "reads":
                for d in spec.deps:
                    seen[d] = read(nodes[d])
            else:
                cond, even, odd = spec.deps
                seen[cond] = read(nodes[cond])
                if seen[cond] != ERR:
                    pick = even if seen[cond] % 2 == 0 else odd
                    seen[pick] = read(nodes[pick])
            log.append(seen)

        self.effects.append(Effect(body, context=self.ctx, name=f"e{index}"))

    # -- the model ------------------------------------------------------------------------

    def value(self, node: int, memo: dict[int, Any] | None = None) -> Any:
        memo = {} if memo is None else memo
        if node < self.n_src:
            return self.env[node]
        if node in memo:
            return memo[node]
        spec = self.comps[node - self.n_src]
        result: Any
        if spec.kind == "sum":
            parts = [self.value(d, memo) for d in spec.deps]
            result = ERR if ERR in parts else sum(parts) % spec.mod
        elif spec.kind == "guard":
            result = self.value(spec.deps[0], memo)
            if result == TRIP:
                result = ERR
        else:
            cond, even, odd = spec.deps
            c = self.value(cond, memo)
            if c == ERR:
                result = ERR
            elif c % 2 == 0:
                result = self.value(even, memo)
            else:
                result = self.value(odd, memo)
                result = ERR if result == ERR else (result + 1) % 5
        memo[node] = result
        return result

    def values(self) -> list[Any]:
        memo: dict[int, Any] = {}
        return [self.value(n, memo) for n in range(len(self.nodes))]

    def expected_reads(self, spec: EffSpec) -> dict[int, Any]:
        memo: dict[int, Any] = {}
        if spec.kind == "reads":
            return {d: self.value(d, memo) for d in spec.deps}
        cond, even, odd = spec.deps
        c = self.value(cond, memo)
        if c == ERR:
            return {cond: c}
        pick = even if c % 2 == 0 else odd
        return {cond: c, pick: self.value(pick, memo)}

    def cone(self, node: int) -> set[int]:
        """Computed indices ``node`` may read, transitively (static over-approximation)."""
        out: set[int] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n < self.n_src or (n - self.n_src) in out:
                continue
            out.add(n - self.n_src)
            stack.extend(self.comps[n - self.n_src].deps)
        return out

    def linked(self) -> set[int]:
        return {j for j in range(len(self.comps)) if self.nodes[self.n_src + j].linked}

    def alive(self) -> list[int]:
        return [i for i, e in enumerate(self.effects) if not e.disposed]


def check_structure(w: World) -> None:
    ctx = w.ctx
    assert ctx._pending == [] and not ctx.in_batch and ctx._observer is None
    alive = {id(w.effects[i]) for i in w.alive()}
    producers = w.nodes
    for p in producers:
        for o in p._observers:
            assert p in o._sources, f"{o!r} observes {p!r} without depending on it"
            if isinstance(o, Effect):
                assert id(o) in alive, f"disposed {o!r} still observes {p!r}"
            else:
                assert o._observers, f"unobserved {o!r} is still linked to {p!r}"
    for e in w.effects:
        if e.disposed:
            assert e._sources == {}
        else:
            for s in e._sources:
                assert e in s._observers, f"{e!r} depends on {s!r} but is not linked"
    reachable: set[int] = set()
    stack = [s for i in w.alive() for s in w.effects[i]._sources]
    while stack:
        n = stack.pop()
        if id(n) in reachable:
            continue
        reachable.add(id(n))
        stack.extend(getattr(n, "_sources", ()))
    for node in producers[w.n_src:]:
        assert node.linked == (id(node) in reachable), f"{node!r} linked={node.linked}"
        if node.linked:
            for s in node._sources:
                assert node in s._observers


def run_items(w: World, items: list[Any], use_cm: bool, touched: set[int],
              reads: list[int]) -> None:
    runs = [e.runs for e in w.effects]

    def body() -> None:
        for item in items:
            if item[0] == "set":
                _, i, v = item
                if v != w.env[i]:
                    touched.add(i)
                w.env[i] = v
                w.nodes[i].set(v)
            elif item[0] == "read":
                node = item[1]
                reads.append(node)
                assert read(w.nodes[node]) == w.value(node), "a read inside a batch is fresh"
            else:
                run_items(w, item[2], item[1], touched, reads)
        assert [e.runs for e in w.effects] == runs, "no effect runs inside a batch"

    if use_cm:
        with w.ctx.batch():
            body()
    else:
        w.ctx.batch(body)


def check_effects(w: World, before_runs: list[int], before_logs: list[int],
                  touched: set[int], ambiguous: bool) -> None:
    for i in w.alive():
        eff, log = w.effects[i], w.logs[i]
        if i >= len(before_runs):  # spawned during this step
            assert eff.runs == 1 and len(log) == 1
            assert log[0] == w.expected_reads(w.specs[i])
            continue
        last = w.logs[i][before_logs[i] - 1]
        value_changed = any(w.value(d) != v for d, v in last.items())
        source_written = any(d < w.n_src and d in touched for d in last)
        still_failing = bool(touched) and ERR in last.values()
        delta = eff.runs - before_runs[i]
        if value_changed:
            assert delta == 1, f"e{i} must rerun exactly once (ran {delta})"
        elif source_written or still_failing or ambiguous:
            assert delta in (0, 1)
        else:
            assert delta == 0, f"e{i} reran though nothing it read changed"
        assert len(log) == before_logs[i] + delta
        if delta:
            assert log[-1] == w.expected_reads(w.specs[i]), f"e{i} saw a glitch"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_random_graphs_match_a_from_scratch_model(
    scenario: tuple[int, list[CompSpec], list[EffSpec], list[Any]],
) -> None:
    n_src, comps, effect_specs, ops = scenario
    w = World(n_src, comps)
    for spec in effect_specs:
        w.spawn(spec)
    for i in w.alive():
        assert w.logs[i] == [w.expected_reads(w.specs[i])]
    check_structure(w)

    for op in ops:
        before_runs = [e.runs for e in w.effects]
        before_logs = [len(log) for log in w.logs]
        before_calls = list(w.calls)
        before_values = w.values()
        linked_before = w.linked()
        touched: set[int] = set()
        reads: list[int] = []
        kind = op[0]
        if kind == "set":
            _, i, v = op
            if v != w.env[i]:
                touched.add(i)
            w.env[i] = v
            w.nodes[i].set(v)
        elif kind == "batch":
            run_items(w, op[2], op[1], touched, reads)
        elif kind == "read":
            reads.append(op[1])
            assert read(w.nodes[op[1]]) == w.value(op[1])
        elif kind == "spawn":
            w.spawn(op[1])
        else:
            alive = w.alive()
            if alive:
                w.effects[alive[op[1] % len(alive)]].dispose()

        after_values = w.values()
        check_effects(w, before_runs, before_logs, touched, ambiguous=bool(reads))
        # Laziness: only linked nodes, the cones of explicit reads, and the cones of what
        # a new effect reads may recompute; without reads inside a batch, at most once.
        allowed = linked_before | w.linked()
        for node in reads:
            allowed |= w.cone(node)
        if kind == "spawn":
            allowed |= set().union(*(w.cone(d) for d in op[1].deps))
        for j, (now, was) in enumerate(zip(w.calls, before_calls, strict=True)):
            if now != was:
                assert j in allowed, f"c{j} recomputed without being read"
            failing = ERR in (before_values[n_src + j], after_values[n_src + j])
            if (kind != "batch" or not reads) and not failing:
                assert now - was <= 1, f"c{j} recomputed {now - was} times in one step"
        check_structure(w)

    for node in range(len(w.nodes)):
        assert read(w.nodes[node]) == w.value(node)
    for e in w.effects:
        e.dispose()
    for node in w.nodes:
        assert not node._observers
    for node in w.nodes[n_src:]:
        assert not node.linked


@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(scenarios())
def test_unobserved_graphs_never_link_and_match_the_model(
    scenario: tuple[int, list[CompSpec], list[EffSpec], list[Any]],
) -> None:
    """Without effects nothing is linked: writes only bump versions; reads validate."""
    n_src, comps, _, ops = scenario
    w = World(n_src, comps)
    for op in ops:
        before = list(w.calls)
        if op[0] == "set":
            w.env[op[1]] = op[2]
            w.nodes[op[1]].set(op[2])
            assert w.calls == before, "a write recomputes nothing"
        elif op[0] == "read":
            assert read(w.nodes[op[1]]) == w.value(op[1])
            cone = w.cone(op[1])
            values = w.values()
            for j, (now, was) in enumerate(zip(w.calls, before, strict=True)):
                if j not in cone:
                    assert now == was, f"c{j} is not in the cone of the read"
                elif values[n_src + j] != ERR:  # a failing node holds no value to reuse
                    assert now - was <= 1
        for node in w.nodes:
            assert not node._observers
    for node in range(len(w.nodes)):
        assert read(w.nodes[node]) == w.value(node)


@st.composite
def clamp_scenarios(draw: st.DrawFn) -> tuple[int, list[CompSpec], list[Any], list[Any]]:
    n_src = draw(st.integers(1, 3))
    n_comp = draw(st.integers(1, 4))
    comps = [draw(comp_specs(n_src + j)) for j in range(n_comp)]
    n_nodes = n_src + n_comp
    clamp = st.tuples(
        st.just("clamp"), st.integers(0, n_src - 1), st.integers(0, 2),
        st.integers(n_src, n_nodes - 1),
    )
    op = st.one_of(
        st.tuples(st.just("set"), st.integers(0, n_src - 1), VALUES),
        st.tuples(st.just("batch"), st.booleans(), st.lists(
            batch_items(n_src, n_nodes, 1), max_size=4)),
        st.tuples(st.just("read"), st.integers(0, n_nodes - 1)),
        st.tuples(st.just("spawn"), eff_specs(n_nodes)),
        clamp,
        st.tuples(st.just("dispose"), st.integers(0, 7)),
    )
    initial = draw(st.lists(clamp, max_size=2))
    return n_src, comps, initial, draw(st.lists(op, max_size=20))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clamp_scenarios())
def test_effects_writing_sources_settle_on_the_model(
    scenario: tuple[int, list[CompSpec], list[Any], list[Any]],
) -> None:
    """Effects that write a source they read ("clamps": ``s = min(s, k)``, also reading a
    computed over the graph) must leave every effect's last run consistent with the
    settled state, whether the write happens in an effect's first run or in a rerun.
    """
    n_src, comps, initial, ops = scenario
    w = World(n_src, comps)
    clamps: dict[int, tuple[int, int]] = {}  # effect index -> (source, bound)

    def add_clamp(source: int, bound: int, extra: int) -> None:
        index = len(w.effects)
        spec = EffSpec("reads", (source, extra))
        w.specs.append(spec)
        w.logs.append([])
        log = w.logs[index]
        nodes = w.nodes

        def body() -> None:
            v = nodes[source].get()
            log.append({source: v, extra: read(nodes[extra])})
            if v > bound:
                nodes[source].set(bound)

        clamps[index] = (source, bound)
        w.effects.append(Effect(body, context=w.ctx, name=f"clamp{index}"))

    def settle() -> None:
        for index, (source, bound) in clamps.items():
            if not w.effects[index].disposed:
                w.env[source] = min(w.env[source], bound)

    def check() -> None:
        settle()
        for i in w.alive():
            assert w.logs[i][-1] == w.expected_reads(w.specs[i]), f"e{i} left stale"
        check_structure(w)

    for op in initial:
        add_clamp(*op[1:])
        check()
    for op in ops:
        kind = op[0]
        if kind == "set":
            w.env[op[1]] = op[2]
            w.nodes[op[1]].set(op[2])
        elif kind == "batch":
            run_items(w, op[2], op[1], set(), [])  # reads inside see the raw writes
        elif kind == "read":
            settle()
            assert read(w.nodes[op[1]]) == w.value(op[1])
        elif kind == "spawn":
            w.spawn(op[1])
        elif kind == "clamp":
            add_clamp(*op[1:])
        else:
            alive = w.alive()
            if alive:
                w.effects[alive[op[1] % len(alive)]].dispose()
        check()
    for node in range(len(w.nodes)):
        assert read(w.nodes[node]) == w.value(node)

"""Probes: one rerun-counting :class:`~lazily_queue.reactive.Effect` per watched reader.

A replay re-baselines every probe before a step and then asserts, reader by reader,
whether its observer reran (the fixture's ``invalidates``); an optional consistency probe
reads all the readers together and records any torn (non-atomic) transition.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..reactive import Effect, Slot, Source
from .compare import ConformanceFailure, fail


def _reaches_root(consumer: Any) -> bool:
    """True when the consumer depends, directly or through computeds, on a Slot or Source."""
    stack = list(consumer._sources)
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (Slot, Source)):
            return True
        stack.extend(getattr(node, "_sources", ()))
    return False


class ProbeSet:
    """One rerun-counting effect per watched reader, plus an optional consistency probe."""

    def __init__(
        self,
        readers: Mapping[str, Slot[Any]],
        consistency: Callable[[Mapping[str, Any]], str | None] | None = None,
    ) -> None:
        self.readers = dict(readers)
        self.effects: dict[str, Effect] = {}
        self._baseline: dict[str, int] = {}
        self.torn: list[str] = []
        self._combined: Effect | None = None
        try:
            for name, reader in self.readers.items():
                self.effects[name] = self._probe(name, reader)
            if consistency is not None and self.readers:
                self._combined = self._consistency_probe(consistency)
        except ConformanceFailure:
            self.dispose()
            raise

    @staticmethod
    def _probe(name: str, reader: Slot[Any]) -> Effect:
        if not callable(getattr(reader, "get", None)) or not hasattr(reader, "ctx"):
            fail(None, f"reader {name}", f"{reader!r} is not a reactive node (E10)")

        def run() -> None:
            reader.get()

        try:
            effect = Effect(run, context=reader.ctx, name=f"probe:{name}")
        except Exception as exc:
            fail(None, f"reader {name}", f"reading it raised {type(exc).__name__}: {exc}")
        if not _reaches_root(effect):
            effect.dispose()
            fail(
                None,
                f"reader {name}",
                "reading it registered no dependency edge, so no change can ever reach an "
                "observer (a polled or non-reactive reader; E10)",
            )
        return effect

    def _consistency_probe(self, rule: Callable[[Mapping[str, Any]], str | None]) -> Effect:
        readers = self.readers
        ctx = next(iter(readers.values())).ctx

        def run() -> None:
            problem = rule({name: reader.get() for name, reader in readers.items()})
            if problem is not None:
                self.torn.append(problem)

        return Effect(run, context=ctx, name="probe:consistency")

    def baseline(self) -> None:
        """Re-read every reader and record each probe's run count (E42)."""
        for name, reader in self.readers.items():
            reader.get()
            self._baseline[name] = self.effects[name].runs
        self.torn.clear()

    def reruns(self) -> dict[str, int]:
        return {name: e.runs - self._baseline[name] for name, e in self.effects.items()}

    def assert_invalidates(
        self, step: int, expected: Mapping[str, Any], *, coalesced: bool = False
    ) -> None:
        """``{}`` asserts every watched reader false; absent readers are unasserted."""
        reruns = self.reruns()
        if coalesced:
            for name, count in reruns.items():
                if count > 1:
                    fail(
                        step,
                        f"invalidates.{name}",
                        f"its observer reran {count} times for one batch; a batch must "
                        "yield one coalesced invalidation",
                    )
        names = list(self.readers) if not expected else list(expected)
        for name in names:
            want = expected.get(name, False)
            got = reruns[name] > 0
            if want is not got:
                hint = ""
                if want and not got:
                    hint = " (a missing invalidation or dependency edge)"
                fail(
                    step,
                    f"invalidates.{name}",
                    f"expected {str(want).lower()}, got {str(got).lower()}{hint}",
                    want,
                    got,
                )
        if self.torn:
            fail(
                step,
                "invalidates",
                f"an observer saw a torn transition (not one atomic frontier walk): {self.torn[0]}",
            )

    def dispose(self) -> None:
        for effect in self.effects.values():
            effect.dispose()
        if self._combined is not None:
            self._combined.dispose()
        self.effects.clear()

"""Replay every queue-family fixture on every flavor through the conformance engine.

Project fixtures (everything under ``fixtures/``) always run; the upstream corpus runs
when ``LAZILY_SPEC_FIXTURES`` names it. QueueCell fixtures also run on
``local-generic`` (the shell's generic storage path instead of the deque fast path).
Every fixture also replays unchanged on ``raft1`` and ``raft3`` (real clusters, async
flavor) and on ``client`` (the cells of a client of a one-member cluster), but for a
work-queue fixture with a ``promote_due`` op at a given time, which needs ``promote_at``
(a cluster promotes only at the leader's stamp: it refuses such a fixture, which
:func:`test_a_cluster_refuses_a_promotion_at_a_given_time` checks). The distributed
corpus (``fixtures/distributed/``, with cluster ops such as ``kill_leader``) replays on
``raft3`` only: a single process has no leader to kill.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lazily_queue.conformance import FLAVORS, Fixture, discover, replay
from lazily_queue.conformance.engine import requirements

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTED = ROOT / "fixtures" / "distributed"
RAFT = ("raft1", "raft3", "client")


def _spec_dir() -> Path | None:
    # Same resolution as the ``spec_fixtures`` fixture (which validates it at run time).
    value = os.environ.get("LAZILY_SPEC_FIXTURES")
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else (ROOT / path).resolve()


def _params(origin: str, root: Path) -> list[object]:
    params: list[object] = []
    for fixture in discover([root]).fixtures:
        if fixture.path is not None and DISTRIBUTED in fixture.path.parents:
            continue
        backends = ["local"]
        if fixture.model == "QueueCell":
            backends.append("local-generic")
        for backend in backends:
            for flavor in FLAVORS:
                suffix = "" if backend == "local" else f"-{backend}"
                test_id = f"{origin}/{fixture.name}[{flavor}{suffix}]"
                params.append(pytest.param(fixture, backend, flavor, id=test_id))
        for backend in RAFT if "promote_at" not in requirements(fixture.document) else ():
            test_id = f"{origin}/{fixture.name}[async-{backend}]"
            params.append(pytest.param(fixture, backend, "async", id=test_id))
    return params


def _distributed() -> list[object]:
    return [
        pytest.param(f, "raft3", "async", id=f"distributed/{f.name}[async-raft3]")
        for f in discover([DISTRIBUTED]).fixtures
    ]


PROJECT = _params("project", ROOT / "fixtures") + _distributed()
SPEC_DIR = _spec_dir()
SPEC = _params("spec", SPEC_DIR) if SPEC_DIR is not None and SPEC_DIR.is_dir() else []


def test_project_corpus_is_complete() -> None:
    fixtures = discover([ROOT / "fixtures"]).fixtures
    queue_files = [f for f in fixtures if f.model == "QueueCell"]
    assert len(queue_files) >= 14
    assert {"QueueCell", "TopicCell", "WorkQueueCell"} <= {f.model for f in fixtures}


@pytest.mark.parametrize("backend", RAFT)
async def test_a_cluster_refuses_a_promotion_at_a_given_time(backend: str) -> None:
    (fixture,) = [f for f in discover([ROOT / "fixtures"]).fixtures
                  if f.name.endswith("/workqueue_promote_due")]
    result = await replay(fixture, backend=backend, flavor="async")
    assert result.skipped is not None and result.skipped.startswith("lacks promote_at:")
    assert result.steps_passed == 0


@pytest.mark.parametrize(("fixture", "backend", "flavor"), PROJECT)
async def test_project_fixture(fixture: Fixture, backend: str, flavor: str) -> None:
    result = await replay(fixture, backend=backend, flavor=flavor)
    assert result.skipped is None, result.skipped
    assert result.failure is None, result.failure.describe()
    assert result.steps_passed == result.steps == len(fixture.steps) > 0


@pytest.mark.parametrize(("fixture", "backend", "flavor"), SPEC)
async def test_spec_fixture(
    fixture: Fixture, backend: str, flavor: str, spec_fixtures: Path | None
) -> None:
    assert spec_fixtures is not None
    result = await replay(fixture, backend=backend, flavor=flavor)
    assert result.skipped is None, result.skipped
    assert result.failure is None, result.failure.describe()
    assert result.steps_passed == result.steps == len(fixture.steps) > 0


def test_spec_corpus_found(spec_fixtures: Path | None) -> None:
    if spec_fixtures is None:
        pytest.skip("LAZILY_SPEC_FIXTURES is not set")
    found = discover([spec_fixtures])
    assert found.fixtures, f"no queue-family fixtures under {spec_fixtures}"
    assert len(SPEC) == sum(
        len(FLAVORS) * (2 if f.model == "QueueCell" else 1)
        + (0 if "promote_at" in requirements(f.document) else len(RAFT))
        for f in found.fixtures
    )


def test_distributed_corpus_covers_failover_restart_partition() -> None:
    fixtures = discover([DISTRIBUTED]).fixtures
    ops = {step["op"]["type"] for f in fixtures for step in f.steps}
    assert {"kill_leader", "restart", "restart_cluster", "partition", "heal"} <= ops
    assert {f.model for f in fixtures} == {"QueueCell", "TopicCell", "WorkQueueCell"}

"""The simulator: many seeds, determinism, the regression fixtures, the hash-seed guard.

Seeds run in a child process started with ``PYTHONHASHSEED=0`` (the simulation is only
deterministic with fixed string hashing); the test process itself may hash randomly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import FIRST, passed, run_simulator

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures" / "distributed" / "sim").glob("*.json"))
#: Seeds ``make test`` runs in all (``make sim SEEDS=1000`` runs many more).
SEEDS = max(int(os.environ.get("LAZILY_SIM_SEEDS", "24")), FIRST + 1)
_sim, _ok = run_simulator, passed


@pytest.mark.timeout(900)  # the simulator's own limit below, on a loaded 2-core machine
def test_many_seeds_pass(first_seeds: str) -> None:
    """The seeds after the first ones (``make sim SEEDS=1000`` runs many more)."""
    assert f"{FIRST} seeds, 0 failed" in first_seeds, first_seeds
    more = SEEDS - FIRST
    out = _ok(_sim("--seeds", str(more), "--start", str(FIRST), "--jobs", "2", timeout=900))
    assert f"{more} seeds, 0 failed" in out, out


def test_client_retries_through_other_members_apply_once(first_seeds: str) -> None:
    """Cluster clients send pushes, pops, claims and acks again through other members
    under the same session and number; each applies once, is answered with the result it
    applied with, none acknowledged is lost and no element reaches two consumers."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    logged = re.search(r"(\d+) client ops logged \((\d+) sent again through another "
                       r"member, (\d+) of them pops, claims or acks; (\d+) answered", out)
    assert logged is not None, out
    assert all(int(n) > 0 for n in logged.groups()), out
    kept = re.search(r"(\d+) elements delivered once", out)
    assert kept is not None and int(kept.group(1)) > 0, out


def test_group_members_that_are_clients_settle_elements(first_seeds: str) -> None:
    """A consumer-group member claims and acks under its client session, retried through
    other members; the group model fails a run where two members hold one element."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    acked = re.search(r"\((\d+) acked by members that are clients\)", out)
    assert acked is not None and int(acked.group(1)) > 0, out


def test_producers_retrying_a_msg_id_never_duplicate(first_seeds: str) -> None:
    """Producers retry a push with its message id after every fault, through any member,
    and send acknowledged ids again; the checker's window model passes every seed."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    repeats = re.search(r"(\d+) msg_id repeats answered", out)
    assert repeats is not None and int(repeats.group(1)) > 0, out


def test_transactions_apply_all_or_none(first_seeds: str) -> None:
    """Workers ack and produce in one transaction and retry it after any fault; the
    checker fails a run where one is applied in part or aborts without cause."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    txns = re.search(r"(\d+) transactions committed and (\d+) aborted whole", out)
    assert txns is not None and int(txns.group(1)) > 0 and int(txns.group(2)) > 0, out


def test_cancelled_pops_give_their_elements_back(first_seeds: str) -> None:
    """A consumer pops through the real ``Driver.call`` and is cancelled as its result is
    ready (a pop committed inside ``propose`` on a member alone among them) and while it
    waits (a step applying the pop between the two halves of the cancellation among
    them); the checker fails a run where an applied pop reached neither its caller nor
    its ``on_orphan`` give-back."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    found = re.search(r"pops through Driver.call: (\d+) applied inside propose, (\d+) "
                      r"cancelled with their elements ready, (\d+) while waiting \((\d+) "
                      r"applied as they were cancelled\); (\d+) cancelled pops given back", out)
    assert found is not None and all(int(n) > 0 for n in found.groups()), out


def test_orphan_give_backs_apply_and_forgotten_sessions_resend_only_ops_not_applied(
        first_seeds: str) -> None:
    """The give-backs of cancelled pops apply (the checker fails a run where one was
    fenced off or never answered); a client's registered session is forgotten while its
    ops are in flight, some sent again under a new session (the checker fails a run where
    one applied under its old number; ``test_forgotten_sessions`` has a seed where one
    fails SessionForgotten)."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    found = re.search(r"given back by on_orphan \((\d+) give-backs applied", out)
    assert found is not None and int(found.group(1)) > 0, out
    found = re.search(r"(\d+) forgotten under a client with ops in flight: (\d+) ops sent "
                      r"again as not applied", out)
    assert found is not None and all(int(n) > 0 for n in found.groups()), out


def test_transactions_count_the_delayed_elements_a_push_makes_ready(first_seeds: str) -> None:
    """Transactions push with options (some with a ttl) into a bounded queue holding due
    delayed elements; the checker fails a run where one applies in part, aborts ``full``
    without cause, or where an element outlives its ttl."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    found = re.search(r"\((\d+) pushing with options into a bounded queue with due delayed "
                      r"elements, (\d+) refused full by those alone, (\d+) pushing with a "
                      r"ttl\)", out)
    assert found is not None and all(int(n) > 0 for n in found.groups()), out


def test_ttl_never_delivers_an_expired_element(first_seeds: str) -> None:
    """A client pushes with per-message and default TTLs, pops and sweeps under every
    fault; the checker fails a run where a pop hands out an element at or after its
    deadline, or where the expired elements differ from its model's. The topic options
    client does the same on topics (per-message TTLs, an age limit, limits)."""
    out = first_seeds
    assert f"{FIRST} seeds, 0 failed" in out, out
    ttl = re.search(r"(\d+) TTL elements expired undelivered \((\d+) delivered live\)", out)
    assert ttl is not None and int(ttl.group(1)) > 0 and int(ttl.group(2)) > 0, out
    topics = re.search(r"(\d+) expired on the option topics \((\d+) delivered live\)", out)
    assert topics is not None and int(topics.group(1)) > 0 and int(topics.group(2)) > 0, out


def test_same_seed_same_trace() -> None:
    for seed in (3,):
        out = _ok(_sim("--seed", str(seed), "--twice"))
        assert f"seed {seed}: ok" in out


def test_same_seed_same_trace_in_fresh_processes() -> None:
    """``--seed N`` reproduces in another process: nothing the run draws depends on
    object addresses (which differ per process)."""
    digests = set()
    for _ in range(2):
        out = _ok(_sim("--seed", "1"))
        found = re.search(r"seed 1: ok in [\d.]+s, trace ([0-9a-f]+)", out)
        assert found is not None, out
        digests.add(found.group(1))
    assert len(digests) == 1, digests


def _defects(doc: dict[str, Any]) -> list[str]:
    """The fixes a fixture undoes: one name, or a list (the bug's fix, then fixes that
    would keep the scenario from reaching it)."""
    defect = doc.get("defect") or []
    return [defect] if isinstance(defect, str) else [str(name) for name in defect]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_fixture_passes_and_catches_its_bug(fixture: Path) -> None:
    _ok(_sim("--fixture", str(fixture)))
    doc = json.loads(fixture.read_text())
    defects = _defects(doc)
    if "undone_shows" in doc:  # the defect is shown by a test instead: it must exist
        path, name = doc["undone_shows"].split("::")
        assert f"def {name}(" in (ROOT / path).read_text(), doc["undone_shows"]
        assert not defects, "a fixture names either its defect or the test that shows it"
    if defects:
        # Without the fix the same scenario must fail: the fixture exercises the bug.
        out = _ok(_sim("--fixture", str(fixture),
                       *(arg for name in defects for arg in ("--without", name))))
        assert "FAIL (expected)" in out, out
        assert f"FAIL (expected): {doc.get('fails_with', '')}" in out, out


def test_a_failing_run_prints_how_to_reproduce_it() -> None:
    fixture = next(f for f in FIXTURES if json.loads(f.read_text()).get("defect"))
    doc = json.loads(fixture.read_text())
    env = dict(os.environ, PYTHONHASHSEED="0")
    code = ("import sys\nfrom simulator.__main__ import main\n"
            "from simulator.defects import without\n"
            f"with without(*{_defects(doc)!r}):\n"
            f"    sys.exit(main(['--fixture', {str(fixture)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout
    assert f"FAIL seed {doc['scenario']['seed']}: " in proc.stdout
    assert f"reproduce: PYTHONHASHSEED=0 python -m simulator --fixture {fixture}" \
        in proc.stdout
    assert "trace lines:" in proc.stdout


def test_refuses_to_run_with_random_hashing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    code = ("from simulator.simulation import Simulation\n"
            "from simulator.scenario import generate\n"
            "Simulation(generate(1))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "PYTHONHASHSEED=0" in proc.stderr

"""``benchmarks/clients.py`` prints its figures as a Markdown table whose every row,
the separator included, has the header's columns; over several rounds each figure and
each ratio is its median; a short run of the script ends with one JSON line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.clients import ROWS, over_rounds, ratios, table  # noqa: E402
from benchmarks.peers_common import markdown_table  # noqa: E402


def _columns(line: str) -> int:
    assert line.startswith("|") and line.endswith("|"), line
    return line.count("|") - 1


def test_every_row_of_the_clients_table_has_the_headers_columns() -> None:
    lazily = {t: {key: 12_345 for key in ROWS} for t in ("unix", "tcp")}
    first = next(iter(ROWS))
    for nats in ({key: 10_000 for key in ROWS}, {}, {first: 10_000}):
        text, found = table(lazily, nats), ratios(lazily, nats)
        lines = text.splitlines()
        assert len(lines) == 2 + len(ROWS)
        assert {_columns(line) for line in lines} == {6}, text
        assert set(lines[1]) == {"|", "-"}  # the separator row
        if nats:
            assert found["unix"][first] == 1.234 and "1.23x" in lines[2]
        else:
            assert found == {} and "—" in lines[2]


def test_a_table_refuses_a_row_of_other_columns() -> None:
    with pytest.raises(ValueError, match="header's 2 columns"):
        markdown_table([["a", "b"], ["only one"]])


def _figures(produce: int, e2e: int, cpu: float) -> dict[str, Any]:
    return {"produce_per_s": produce, "end_to_end_per_s": e2e, "member": "1",
            "produce_cpu_us": {"client": cpu, "n1": 2 * cpu}, "end_to_end_cpu_us": {"n1": cpu}}


def test_rounds_give_each_figures_median_and_each_ratios_median() -> None:
    rounds = [{"lazily": {"unix": _figures(100, 10, 1.0), "tcp": _figures(90, 9, 1.0)},
               "nats": _figures(50, 20, 5.0)},
              {"lazily": {"unix": _figures(300, 30, 3.0), "tcp": _figures(70, 7, 3.0)},
               "nats": _figures(300, 10, 7.0)},
              {"lazily": {"unix": _figures(200, 20, 2.0), "tcp": _figures(80, 8, 2.0)},
               "nats": {"error": "RuntimeError: boom"}}]
    lazily, nats, medians = over_rounds(rounds)
    assert lazily["unix"]["produce_per_s"] == 200 and lazily["tcp"]["end_to_end_per_s"] == 8
    assert lazily["unix"]["produce_cpu_us"] == {"client": 2.0, "n1": 4.0}
    assert nats["produce_per_s"] == 175 and nats["produce_cpu_us"]["n1"] == 12.0  # 2 rounds
    # round 1: 100/50 = 2.0, round 2: 300/300 = 1.0, round 3 has no NATS figure
    assert medians["unix"]["produce_per_s"] == 1.5
    assert medians["tcp"]["end_to_end_per_s"] == pytest.approx((9 / 20 + 7 / 10) / 2, abs=0.001)
    # the table shows the ratios' medians (tcp: 1.8 and 0.23), not median over median (0.46)
    produce = table(lazily, nats, medians).splitlines()[2]
    assert [cell.strip() for cell in produce.strip("|").split("|")][4:] == ["1.50x", "1.02x"]
    _, failed, none = over_rounds([rounds[2]])
    assert failed == {"error": "RuntimeError: boom"} and none == {}


@pytest.mark.slow
@pytest.mark.timeout(280)
def test_two_short_rounds_end_with_one_json_line_of_medians() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "clients.py"),
                           "--count", "300", "--rounds", "2", "--json"],
                          capture_output=True, text=True, timeout=260, cwd=ROOT)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    out = json.loads(lines[-1])
    assert out["rounds"] == 2 and len(out["each_round"]) == 2
    assert sum(line.startswith("-- round ") for line in lines) == 2
    assert any(line.startswith("2 rounds, lazily-queue and NATS taking turns") for line in lines)
    for tag in ("unix", "tcp"):
        each = [one["lazily"][tag]["produce_per_s"] for one in out["each_round"]]
        assert out["lazily"][tag]["produce_per_s"] == round(sum(each) / 2)
    if shutil.which("nats-server") is None:
        assert out["nats"] == {"error": "nats-server not found: apt install nats-server"}
    else:
        assert "error" not in out["nats"], out["nats"]
        assert set(out["ratios"]) == {"unix", "tcp"}


def test_zero_rounds_is_refused_in_one_line() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "clients.py"),
                           "--rounds", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--count and --rounds must be at least 1" in done.stderr

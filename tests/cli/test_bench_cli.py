"""``lazily-queue bench`` dispatches to benchmarks/NAME.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.cli import main


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    (tmp_path / "hello.py").write_text(
        "import sys\nprint('hello bench', sys.argv[1:])\nsys.exit(3)\n")
    (tmp_path / "_helper.py").write_text("")
    return tmp_path


def test_lists_the_benchmarks(bench_dir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dir", str(bench_dir)]) == 0
    out = capfd.readouterr().out
    assert "hello" in out and "_helper" not in out


def test_runs_one_with_its_arguments_and_status(
    bench_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dir", str(bench_dir), "hello", "--json", "-n", "2"]) == 3
    assert "hello bench ['--json', '-n', '2']" in capfd.readouterr().out


def test_unknown_benchmark(bench_dir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dir", str(bench_dir), "nope"]) == 2
    assert "no benchmark 'nope'" in capfd.readouterr().err


def test_the_checkout_benchmarks_are_found(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["bench"]) == 0
    assert "local_queue" in capfd.readouterr().out

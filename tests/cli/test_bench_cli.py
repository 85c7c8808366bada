"""``lazily-queue bench`` dispatches to benchmarks/NAME.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from lazily_queue.cli import main


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    (tmp_path / "hello.py").write_text(
        "import sys\n\nif __name__ == \"__main__\":\n"
        "    print('hello bench', sys.argv[1:])\n    sys.exit(3)\n")
    (tmp_path / "_helper.py").write_text("")
    (tmp_path / "hello_app.py").write_text("async def main(node, options): ...\n")
    return tmp_path


def test_lists_the_benchmarks(bench_dir: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dir", str(bench_dir)]) == 0
    out = capfd.readouterr().out
    assert "hello" in out and "_helper" not in out
    assert "hello_app" not in out  # a module a benchmark uses, which runs nothing


def test_a_module_that_is_no_script_is_not_run(
    bench_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dir", str(bench_dir), "hello_app"]) == 2
    assert "no benchmark 'hello_app'" in capfd.readouterr().err


def test_every_listed_checkout_benchmark_is_a_script(
    capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench"]) == 0
    out = capfd.readouterr().out
    assert "raft_queue" in out and "raft_load" not in out and "peers_common" not in out


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

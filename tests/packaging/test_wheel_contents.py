"""The wheel holds the product: no simulator, fault proxy or test-only helper in it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Module names (last dotted part, or a package) that belong to tests, not the product.
TEST_ONLY = {"simulator", "sim", "proxy", "chaos_app", "node_procs", "harness", "cluster_builders"}
IGNORED = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                                 ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis",
                                 ".lazily-demo")


def _test_only(modules: list[str]) -> list[str]:
    return [m for m in modules if TEST_ONLY & set(m.removesuffix(".py").split("/"))]


def _packaged_modules() -> list[str]:
    """The .py files setuptools would package, per pyproject.toml's discovery rules."""
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert dist.packages, "setuptools found no packages"
    package_dir = dist.package_dir or {}
    modules = []
    for package in dist.packages:
        top = package.split(".")[0]
        base = ROOT / package_dir.get(top, top)
        folder = base.joinpath(*package.split(".")[1:])
        modules += [f"{package.replace('.', '/')}/{p.name}" for p in sorted(folder.glob("*.py"))]
    return modules


def test_package_discovery_leaves_test_tooling_out() -> None:
    modules = _packaged_modules()
    assert "lazily_queue/testing.py" in modules
    assert "lazily_queue/node.py" in modules and "lazily_transports/abc.py" in modules
    assert not any(m.startswith(("simulator/", "tests/", "benchmarks/")) for m in modules)
    assert _test_only(modules) == []


def test_the_test_only_names_are_recognised() -> None:
    assert _test_only(["simulator/proxy.py", "lazily_queue/sim/node.py",
                       "lazily_queue/demo/chaos_app.py"]) == [
        "simulator/proxy.py", "lazily_queue/sim/node.py", "lazily_queue/demo/chaos_app.py"]
    assert _test_only(["lazily_queue/testing.py", "lazily_queue/demo/cluster.py"]) == []


def test_built_wheel_has_no_test_tooling(tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(ROOT, source, ignore=IGNORED)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         str(source), "-w", str(tmp_path / "wheel")],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert "lazily_queue/testing.py" in modules
    assert _test_only(modules) == []
    assert sorted(modules) == sorted(_packaged_modules())

"""An editable install (``pip install -e .``) is visible to mypy in a user's project.

setuptools' default editable install of a project with two package roots is an import
hook that type checkers cannot follow; ``build_support/editable_install.py`` makes it
a plain ``.pth`` of the roots. The test builds the editable wheel, installs its ``.pth``
into a fresh virtual environment and runs mypy there on a user's module.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_CODE = '''
from lazily_queue import QueueCell
from lazily_transports import LinkConfig

queue: QueueCell[int] = QueueCell()
length: int = queue.len()
config = LinkConfig(peer_id=1, session_id="s", secret=b"x")
wrong: str = queue.len()
'''


@pytest.mark.slow
def test_mypy_sees_an_editable_install(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
         "print(b.build_editable(sys.argv[1]))", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = zipfile.ZipFile(tmp_path / build.stdout.strip().splitlines()[-1])
    names = wheel.namelist()
    assert not [n for n in names if "finder" in n], names  # no import hook
    (pth,) = [n for n in names if n.endswith(".pth")]
    roots = wheel.read(pth).decode().split()
    assert roots == [str(ROOT), str(ROOT / "transports")]

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (Path(purelib) / pth).write_bytes(wheel.read(pth))
    found = subprocess.run(  # the packages' own dependencies are not in this venv
        [str(python), "-c", "import importlib.util as u; "
         "print(u.find_spec('lazily_queue').origin, u.find_spec('lazily_transports').origin)"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert found.stdout.split() == [str(ROOT / "lazily_queue" / "__init__.py"),
                                    str(ROOT / "transports" / "lazily_transports" /
                                        "__init__.py")], found.stderr

    (tmp_path / "app.py").write_text(USER_CODE)
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--python-executable", str(python), "app.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "import-not-found" not in checked.stdout, checked.stdout
    assert checked.stdout.splitlines()[0] == (
        'app.py:8: error: Incompatible types in assignment (expression has type "int", '
        'variable has type "str")  [assignment]'), checked.stdout
    assert sysconfig.get_paths()["purelib"] != purelib  # a venv of its own

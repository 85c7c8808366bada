"""A process at its open-file limit still closes its links: what a close needs
(anyio's cancel scopes and asyncio backend, loaded by anyio on first use) is loaded with
the package, not by the first close, which could not open the modules' files then
(EMFILE: a node at its limit logged "Task exception was never retrieved" with a
traceback for each link its listener closed at once)."""

from __future__ import annotations

import subprocess
import sys


def test_what_a_close_needs_is_loaded_with_the_package() -> None:
    script = ("import sys, lazily_transports; print('anyio._core._tasks' in sys.modules "
              "and 'anyio._backends._asyncio' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "True", done.stderr

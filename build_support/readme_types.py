"""The README's Python blocks type-checked as a user's code: ``mypy --strict`` against the
package's types (it ships ``py.typed``), so an example copied into a typed project checks
clean.

The blocks are taken the way ``tests/docs/test_readme.py`` runs them: a block whose
first line is ``# NAME.py: ...`` is the file ``NAME.py`` (other blocks import it), a
``# fragment of PATH`` block is skipped (its lines are in ``PATH``, which ``make lint``
checks), and every other block is a program of its own. Each is written to a temporary
directory and checked from the repository's root (as ``mypy examples`` is, so the
checkout's package is the one the blocks are checked against, under the project's mypy
settings); the errors are reported at their README lines.

Run ``python -m build_support.readme_types [README]`` from the repository's root (``make
lint`` does): it prints ``README.md:LINE: error: ...`` lines and exits 1 when there are
any.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A bound that only a hung checker reaches.
TIMEOUT = 900
#: mypy's cache for these checks, apart from the one ``mypy`` and ``mypy examples`` keep:
#: a run of theirs in between (``make lint``, the typing tests beside these) left entries
#: these checks did not reuse, and each check type-checked the whole package again.
CACHE = ".mypy_cache/readme-blocks"


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its text, the README line of its opening fence."""

    lang: str
    body: str
    line: int

    @property
    def first(self) -> str:
        return self.body.splitlines()[0] if self.body else ""

    @property
    def file_name(self) -> str | None:
        """``NAME.py`` (``.toml``) when the block's first line is ``# NAME.py: ...``."""
        found = re.match(r"# ([\w.-]+\.(?:py|toml)):", self.first)
        return found.group(1) if found else None

    @property
    def is_fragment(self) -> bool:
        return self.first.startswith("# fragment of ")


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    found = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.M | re.S):
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(match.group(1), match.group(2), line))
    return found


def python_files(text: str) -> dict[str, Block]:
    """The Python blocks to check, by the file name each is written under."""
    files: dict[str, Block] = {}
    for block in blocks(text):
        if block.lang != "python" or block.is_fragment:
            continue
        name = block.file_name or f"readme_line{block.line}.py"
        if name in files:
            raise ValueError(f"README line {block.line}: a second block named {name}")
        files[name] = block
    return files


def check(text: str, *, readme: str = "README.md", root: Path = ROOT) -> list[str]:
    """``mypy --strict``'s messages about the Python blocks of ``text`` (a README), each as
    ``README:LINE: ...``; empty when they type-check. The package is the one in ``root``."""
    files = python_files(text)
    with tempfile.TemporaryDirectory(prefix="readme-types-") as tmp:
        directory = Path(tmp)
        for name, block in files.items():
            (directory / name).write_text(block.body)
        out = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-warn-unused-ignores",
             "--cache-dir", str(root / CACHE), "--no-error-summary", "--no-pretty",
             "--no-color-output",
             *sorted(str(directory / name) for name in files)],
            cwd=root, capture_output=True, text=True, timeout=TIMEOUT)
    messages = []
    for line in out.stdout.splitlines():
        found = re.match(r"(.*?)([\w.-]+\.py):(\d+):(.*)", line)
        if found is None or found.group(1) != f"{directory}/" or found.group(2) not in files:
            messages.append(line)  # about the package or mypy itself: shown as it is
            continue
        block = files[found.group(2)]
        messages.append(f"{readme}:{block.line + int(found.group(3))}:{found.group(4)}")
    if out.returncode not in (0, 1) or (out.returncode == 1 and not messages):
        messages.append(f"mypy failed (exit status {out.returncode}): {out.stderr.strip()}")
    return messages


def main(argv: list[str]) -> int:
    path = Path(argv[0]).resolve() if argv else ROOT / "README.md"
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    messages = check(path.read_text(), readme=str(shown))
    for message in messages:
        print(message)
    return 1 if messages else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

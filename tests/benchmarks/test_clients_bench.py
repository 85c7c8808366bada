"""``benchmarks/clients.py`` prints its figures as a Markdown table whose every row,
the separator included, has the header's columns."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.clients import ROWS, table  # noqa: E402
from benchmarks.peers_common import markdown_table  # noqa: E402


def _columns(line: str) -> int:
    assert line.startswith("|") and line.endswith("|"), line
    return line.count("|") - 1


def test_every_row_of_the_clients_table_has_the_headers_columns() -> None:
    lazily = {t: {key: 12_345 for key in ROWS} for t in ("unix", "tcp")}
    first = next(iter(ROWS))
    for nats in ({key: 10_000 for key in ROWS}, {}, {first: 10_000}):
        text, ratios = table(lazily, nats)
        lines = text.splitlines()
        assert len(lines) == 2 + len(ROWS)
        assert {_columns(line) for line in lines} == {6}, text
        assert set(lines[1]) == {"|", "-"}  # the separator row
        if nats:
            assert ratios["unix"][first] == 1.234 and "1.23x" in lines[2]


def test_a_table_refuses_a_row_of_other_columns() -> None:
    with pytest.raises(ValueError, match="header's 2 columns"):
        markdown_table([["a", "b"], ["only one"]])

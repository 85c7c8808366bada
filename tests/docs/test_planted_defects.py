"""The planted defects of ``tests/mutations/`` (run by ``tests/mutate.py``) stay in step
with the code: every planted defect's target occurs exactly once in its file, and the
tests named to catch it exist."""

from __future__ import annotations

import re

from tests.mutate import MUTATIONS, ROOT


def test_every_planted_defect_targets_code_that_is_there() -> None:
    stale = [f"{m.name}: {m.path} holds its target {(ROOT / m.path).read_text().count(m.old)}"
             " times" for m in MUTATIONS
             if not (ROOT / m.path).exists() or (ROOT / m.path).read_text().count(m.old) != 1]
    assert not stale, stale


def test_every_planted_defect_names_tests_that_exist() -> None:
    missing = []
    for m in MUTATIONS:
        for test in m.tests:
            path, _, name = test.partition("::")
            source = (ROOT / path).read_text() if (ROOT / path).exists() else None
            if source is None or (name and not re.search(
                    rf"def {re.escape(name.split('[')[0])}\(", source)):
                missing.append(f"{m.name}: {test}")
    assert not missing, missing

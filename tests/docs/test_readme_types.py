"""The README's Python blocks pass ``mypy --strict`` as a user's code (``make lint`` runs
the same check): an example copied into a typed project checks clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_support.readme_types import check, python_files

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("readme-mypy")]


def test_the_readme_blocks_pass_mypy_strict() -> None:
    assert check(README.read_text()) == []


def _line_of(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


def test_a_type_error_planted_in_a_block_is_reported_at_its_readme_line() -> None:
    text = README.read_text()
    # A call the API refuses (a work queue's priority is an int) in the first program, and
    # a wrong assignment in the file block ``myapp.py`` (checked under its own name).
    planted = text.replace('await jobs.push({"resize": "cat.png"})',
                           'await jobs.push({"resize": "cat.png"}, priority="high")', 1)
    planted = planted.replace("for k in range(options[\"workers\"])]",
                              "for k in range(options[\"workers\"])]\n    name: int = work", 1)
    assert planted.count('priority="high"') == 1 and planted.count("name: int = work") == 1
    high_line, name_line = _line_of(planted, 'priority="high"'), _line_of(planted, "name: int")
    messages = check(planted)
    assert len(messages) == 2, messages
    priority, assignment = sorted(messages, key=lambda m: int(m.split(":")[1]))
    assert priority.startswith(f"README.md:{high_line}: error:")
    assert '"priority"' in priority and "[arg-type]" in priority
    assert assignment.startswith(f"README.md:{name_line}: error:")
    assert "[assignment]" in assignment


def test_a_closable_iterator_of_the_api_is_one_aclosing_accepts() -> None:
    """``contextlib.aclosing`` around the cells' iterators (each ends early cleanly through
    ``aclose()``), as a block of a README would use them."""
    text = '''```python
import contextlib

from lazily_queue import QueueCell, TopicCell, WorkQueueCell


async def drain(q: QueueCell[str], t: TopicCell[str], w: WorkQueueCell) -> None:
    async with contextlib.aclosing(q.items()) as items, \\
            contextlib.aclosing(aiter(q)) as values, \\
            contextlib.aclosing(q.messages()) as messages, \\
            contextlib.aclosing(t.stream("s")) as stream, \\
            contextlib.aclosing(t.stream_messages("s")) as published, \\
            contextlib.aclosing(w.deliveries("w")) as jobs:
        print([x async for x in items], [x async for x in values],
              [m.id async for m in messages], [x async for x in stream],
              [m.id async for m in published], [j.message_id async for j in jobs])
```
'''
    assert list(python_files(text)) == ["readme_line1.py"]
    assert check(text) == []
    wrong = text.replace("contextlib.aclosing(q.items())", "contextlib.aclosing(q.len())")
    assert "README.md:8: error: Value of type variable" in "\n".join(check(wrong))

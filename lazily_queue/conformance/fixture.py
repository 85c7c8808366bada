"""Loading and discovering queue-family fixtures (``kind: "Collection"``).

A queue-family fixture is a JSON object with ``kind == "Collection"``. Its ``model``
must be one of :data:`MODELS`; an unknown model is reported when the fixture is
replayed, never silently skipped. Other JSON documents in a directory tree (handshake,
signaling, codec fixtures) are ignored and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..small_files import read_bounded

MODELS = ("QueueCell", "TopicCell", "WorkQueueCell")
KIND = "Collection"
TOP_LEVEL_KEYS = frozenset({"description", "kind", "model", "initial", "steps", "invariants"})


class FixtureError(Exception):
    """A fixture file cannot be read as a queue-family fixture."""


@dataclass(frozen=True)
class Fixture:
    """One parsed fixture document and where it came from."""

    name: str
    path: Path | None
    document: dict[str, Any]

    @property
    def model(self) -> Any:
        return self.document.get("model")

    @property
    def steps(self) -> list[Any]:
        steps = self.document.get("steps")
        return steps if isinstance(steps, list) else []

    @classmethod
    def from_document(cls, document: dict[str, Any], name: str = "<inline>") -> Fixture:
        return cls(name=name, path=None, document=document)


@dataclass
class Discovery:
    """The fixtures found under some paths, and how many JSON files were ignored."""

    fixtures: list[Fixture] = field(default_factory=list)
    ignored: list[Path] = field(default_factory=list)


def is_queue_family(document: object) -> bool:
    """True for a JSON object whose ``kind`` is ``"Collection"``."""
    return isinstance(document, dict) and document.get("kind") == KIND


#: The largest fixture file read (bytes).
MAX_FIXTURE_BYTES = 64 * 1024 * 1024


def load_fixture(path: Path, name: str | None = None) -> Fixture:
    """Parse ``path``; raises :class:`FixtureError` unless it is a queue-family fixture."""
    try:
        data = read_bounded(path, MAX_FIXTURE_BYTES)
        if len(data) > MAX_FIXTURE_BYTES:
            raise FixtureError(f"{path}: holds more than {MAX_FIXTURE_BYTES // 1024 // 1024} "
                               "MiB; a fixture is a JSON document of at most that")
        document = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise FixtureError(f"{path}: cannot read JSON: {exc}") from exc
    except RecursionError:
        raise FixtureError(f"{path}: cannot read JSON: it is nested too deeply") from None
    if not is_queue_family(document):
        raise FixtureError(f'{path}: not a queue-family fixture (kind must be "{KIND}")')
    return Fixture(name=name or path.stem, path=path, document=document)


def _json_files(root: Path) -> Iterator[Path]:
    yield from sorted(p for p in root.rglob("*.json") if p.is_file())


def discover(paths: Iterable[Path | str]) -> Discovery:
    """Queue-family fixtures under ``paths`` (files or directories, searched recursively).

    A file named explicitly must be a queue-family fixture (else :class:`FixtureError`);
    inside directories, other JSON files are ignored and listed in ``ignored``.
    """
    found = Discovery()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for file in _json_files(path):
                try:
                    found.fixtures.append(load_fixture(file, name=_display_name(path, file)))
                except FixtureError:
                    found.ignored.append(file)
        elif path.is_file():
            found.fixtures.append(load_fixture(path))
        else:
            raise FixtureError(f"{path}: no such file or directory")
    return found


def _display_name(root: Path, file: Path) -> str:
    relative = file.relative_to(root).with_suffix("")
    return relative.as_posix()

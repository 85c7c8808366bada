"""Every upstream and project TopicCell / WorkQueueCell fixture replays on the cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from topic_work_replay import PROJECT, fixture_id, fixture_paths, load, replay_topic, replay_work

TOPIC = fixture_paths("topiccell")
WORK = fixture_paths("workqueue")


@pytest.mark.parametrize("path", TOPIC, ids=[fixture_id(p) for p in TOPIC])
def test_topic_fixture(path: Path) -> None:
    replay_topic(load(path))


@pytest.mark.parametrize("path", WORK, ids=[fixture_id(p) for p in WORK])
def test_work_queue_fixture(path: Path) -> None:
    replay_work(load(path))


def test_project_corpus_size() -> None:
    assert len(list(PROJECT.glob("topiccell_*.json"))) >= 8
    assert len(list(PROJECT.glob("workqueue_*.json"))) >= 8


def _mutated(path: Path, step: int, *keys: str, value: object) -> dict[str, object]:
    doc = load(path)
    target = doc["steps"][step]
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = value
    return doc


PROJECT_TOPIC = PROJECT / "topiccell_publish_invalidates_connected_only.json"
PROJECT_WORK = PROJECT / "workqueue_settlement_ownership.json"


@pytest.mark.parametrize(
    ("keys", "value"),
    [
        (("expected", "invalidates", "tail"), False),  # an expected false must fail
        (("expected", "invalidates"), {}),  # {} asserts that nothing invalidated
        (("expected", "subscriptions", "ghost"), {"durability": "durable", "connected": False,
                                                  "cursor": 0}),
        (("expected", "reads", "off"), ["a"]),
    ],
)
def test_topic_replayer_rejects_wrong_expectations(keys: tuple[str, ...], value: object) -> None:
    with pytest.raises(AssertionError):
        replay_topic(_mutated(PROJECT_TOPIC, 0, *keys, value=value))


@pytest.mark.parametrize(
    ("step", "keys", "value"),
    [
        (2, ("returns",), 0),  # false is not 0
        (1, ("returns", "extra"), None),  # delivery key set is exact
        (1, ("expected", "invalidates", "is_empty"), False),
        (2, ("expected", "invalidates", "in_flight_len"), True),
    ],
)
def test_work_replayer_rejects_wrong_expectations(
    step: int, keys: tuple[str, ...], value: object
) -> None:
    with pytest.raises(AssertionError):
        replay_work(_mutated(PROJECT_WORK, step, *keys, value=value))

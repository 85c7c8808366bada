"""examples/prometheus-alerts.yml and examples/grafana-dashboard.json: well formed, and
every metric they use is one a node exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from lazily_queue import testing
from lazily_queue.metrics import NodeMetrics
from lazily_queue.metrics_gauges import TABLE_GAUGES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALERTS = EXAMPLES / "prometheus-alerts.yml"
DASHBOARD = EXAMPLES / "grafana-dashboard.json"
METRIC = re.compile(r"\b((?:lazily_queue|process)_[a-z0-9_]+)\b")
DURATION = re.compile(r"^\d+[smhd]$")


def rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    assert list(doc) == ["groups"]
    found = [rule for group in doc["groups"] for rule in group["rules"]]
    assert found
    return found


def dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def balanced(expr: str) -> bool:
    depth = {"(": 0, "{": 0, "[": 0}
    closing = {")": "(", "}": "{", "]": "["}
    for char in re.sub(r'"[^"]*"', '""', expr):
        if char in depth:
            depth[char] += 1
        elif char in closing:
            depth[closing[char]] -= 1
            if depth[closing[char]] < 0:
                return False
    return not any(depth.values())


def expressions() -> list[str]:
    exprs = [rule["expr"] for rule in rules()]
    for panel in dashboard()["panels"]:
        exprs += [target["expr"] for target in panel["targets"]]
    return exprs


def test_alert_rules_are_well_formed() -> None:
    names = [rule["alert"] for rule in rules()]
    assert len(names) == len(set(names)), "two alerts share a name"
    for rule in rules():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert isinstance(rule["expr"], str) and balanced(rule["expr"]), rule["alert"]
        assert DURATION.match(str(rule.get("for", "0s"))), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_the_dashboard_is_well_formed() -> None:
    doc = dashboard()
    assert doc["uid"] and doc["title"] and doc["schemaVersion"] >= 30
    ids = [panel["id"] for panel in doc["panels"]]
    assert len(ids) == len(set(ids))
    boxes: list[tuple[int, int, int, int]] = []
    for panel in doc["panels"]:
        grid = panel["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        box = (grid["x"], grid["y"], grid["x"] + grid["w"], grid["y"] + grid["h"])
        assert not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3]
                       for b in boxes), f"panel {panel['title']!r} overlaps another"
        boxes.append(box)
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert balanced(target["expr"]) and target["refId"], panel["title"]
    variable = doc["templating"]["list"][0]
    assert "lazily_queue_node_info" in variable["query"]


def test_the_dashboard_shows_every_bounded_table_gauge() -> None:
    shown = {name for panel in dashboard()["panels"] for target in panel["targets"]
             for name in METRIC.findall(target["expr"])}
    gauges = {f"lazily_queue_{name}" for name, _, _, _ in TABLE_GAUGES}
    gauges |= {f"lazily_queue_{name}_limit" for name, _, figure, _ in TABLE_GAUGES
               if figure in ("count", "bytes")}
    gauges |= {"lazily_queue_work_receipts", "lazily_queue_work_receipts_limit"}
    missing = sorted(gauges - shown)
    assert not missing, f"no dashboard panel shows {missing}"


async def test_every_metric_used_is_exported(tmp_path: Path) -> None:
    async with testing.cluster(data_dir=tmp_path, maintenance_interval=None) as cluster:
        leader = await cluster.leader()
        metrics = NodeMetrics(leader)
        await leader.queue("orders").push(1)
        jobs = leader.work_queue("jobs", visibility_timeout=30, max_deliveries=1)
        await jobs.push(1)
        await jobs.nack("w", (await jobs.claim("w")).delivery_id)
        news = leader.topic("news")
        await news.subscribe("reader")
        await news.publish(1)
        await cluster.settle()
        text = metrics.render().decode()
    exported = {sample.name for family in text_string_to_metric_families(text)
                for sample in family.samples}
    used = {name for expr in expressions() for name in METRIC.findall(expr)}
    assert used, "no metric found in the examples"
    missing = sorted(used - exported)
    assert not missing, f"the examples use metrics no node exports: {missing}"


def test_promtool_accepts_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus); the rules were "
                    "checked here only for structure and metric names")
    out = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


ALERT_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'lazily_queue_client_sessions_most_per_client{{instance="a"}}'
        values: '9000x20'
      - series: 'lazily_queue_client_sessions_limit{{instance="a"}}'
        values: '16384x20'
      - series: 'lazily_queue_client_sessions_most_per_client{{instance="b"}}'
        values: '100x20'
      - series: 'lazily_queue_client_sessions_limit{{instance="b"}}'
        values: '16384x20'
    alert_rule_test:
      - eval_time: 5m
        alertname: LazilyQueueClientHoldsManySessions
        exp_alerts: []
      - eval_time: 15m
        alertname: LazilyQueueClientHoldsManySessions
        exp_alerts:
          - exp_labels: {{severity: warning}}
            exp_annotations:
              summary: {summary}
              description: {description}
"""


def test_promtool_fires_the_alert_of_one_client_holding_many_sessions(
        tmp_path: Path) -> None:
    """Over half the bound held by one client for 10 min fires it; the figure of the
    other instance does not hide it."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    rule = next(r for r in rules() if r["alert"] == "LazilyQueueClientHoldsManySessions")
    spec = tmp_path / "alerts-test.yml"
    spec.write_text(ALERT_TESTS.format(
        rules=json.dumps(str(ALERTS)), summary=json.dumps(rule["annotations"]["summary"]),
        description=json.dumps(rule["annotations"]["description"])))
    out = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


PINNED_TESTS = """
rule_files: [{rules}]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'lazily_queue_topic_pinned_entries{{instance="a",name="news",subscriber="gone"}}'
        values: '200000x40'
      - series: 'lazily_queue_topic_pinned_entries{{instance="b",name="news",subscriber="gone"}}'
        values: '200000x40'
      - series: 'lazily_queue_topic_pinned_entries{{instance="a",name="log",subscriber="slow"}}'
        values: '50x40'
    alert_rule_test:
      - eval_time: 20m
        alertname: LazilyQueueTopicRetentionPinned
        exp_alerts: []
      - eval_time: 35m
        alertname: LazilyQueueTopicRetentionPinned
        exp_alerts:
          - exp_labels: {{severity: warning, name: news, subscriber: gone}}
            exp_annotations:
              summary: {summary}
              description: {description}
"""


def test_promtool_fires_the_alert_of_a_subscriber_pinning_retention(tmp_path: Path) -> None:
    """A durable subscriber holding over 100000 elements for 30 min fires one alert per
    topic and subscriber (not per member reporting it); a small one does not."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    rule = next(r for r in rules() if r["alert"] == "LazilyQueueTopicRetentionPinned")
    summary = rule["annotations"]["summary"].replace("{{ $labels.subscriber }}", "gone") \
        .replace("{{ $labels.name }}", "news").replace("{{ $value }}", "200000")
    spec = tmp_path / "alerts-test.yml"
    spec.write_text(PINNED_TESTS.format(
        rules=json.dumps(str(ALERTS)), summary=json.dumps(summary),
        description=json.dumps(rule["annotations"]["description"])))
    out = subprocess.run([promtool, "test", "rules", str(spec)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr

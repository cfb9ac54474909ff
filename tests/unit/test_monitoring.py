"""deploy/prometheus-rules.yaml and deploy/grafana-dashboard.json read only series that exist:
the controller's metrics (integrations/cluster/metrics.py), the rules' own records, or Kueue's own
(``kueue_*``). The rules' behaviour is tested by promtool (`make promtool`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from trainweave.integrations.cluster.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exported() -> set[str]:
    """Sample names the controller's /metrics can show."""
    names = set()
    for fam in Metrics().registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        names |= {fam.name + s for s in suffixes.get(fam.type, [""])}
    return names


def rules() -> list[dict[str, str]]:
    doc = yaml.safe_load((ROOT / "deploy/prometheus-rules.yaml").read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def dashboard_exprs() -> list[str]:
    dash = json.loads((ROOT / "deploy/grafana-dashboard.json").read_text())
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


def unknown(expr: str, known: set[str]) -> set[str]:
    quoted = re.sub(r'"[^"]*"', '""', expr)  # label values are not series
    series = {n for n in NAME.findall(quoted) if "trainweave" in n or n.startswith("kueue_")}
    return {n for n in series if n not in known and not n.startswith("kueue_")}


def test_rules_and_dashboard_read_only_existing_series() -> None:
    records = {r["record"] for r in rules() if "record" in r}
    known = exported() | records
    assert "trainweave_step_waiting_since_seconds" in known  # the check sees the metrics
    for expr in [r["expr"] for r in rules()] + dashboard_exprs():
        assert unknown(expr, known) == set(), expr
    assert unknown("trainweave_no_such_metric > 0", known) == {"trainweave_no_such_metric"}


def test_dashboard_panels_use_the_datasource_variable_and_every_record() -> None:
    dash = json.loads((ROOT / "deploy/grafana-dashboard.json").read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    assert {t["datasource"]["uid"] for p in dash["panels"] for t in p["targets"]} == {
        "${datasource}"
    }
    shown = " ".join(dashboard_exprs())
    records = {r["record"] for r in rules() if "record" in r}
    assert {r for r in records if r not in shown} == set()

"""deploy/grafana/loregate-dashboard.json: valid panels whose every query names a metric `/metrics` exports.

The gateway scraped here is real (session database, the Temporal dev server), so the names are checked
against what an operator's Prometheus would actually receive, not against a list kept beside the dashboard.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from governance.config import Settings
from tests.utils.gateway import running_gateway
from tests.utils.promotion_gateway import temporal_settings

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "loregate-dashboard.json"
METRIC = re.compile(r"\bloregate_[a-z0-9_]+\b")
# what the text format derives from a family's name, by its type
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum", "_created")}


def _panels() -> list[dict[str, Any]]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert isinstance(panels, list) and panels
    return panels


def _exported(exposition: str) -> set[str]:
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.add(family.name)
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def test_dashboard_panels_each_have_a_titled_query() -> None:
    ids = [panel["id"] for panel in _panels()]
    assert len(ids) == len(set(ids))
    for panel in _panels():
        assert panel["title"] and panel["targets"], panel
        for target in panel["targets"]:
            assert METRIC.search(target["expr"]), target


def test_every_dashboard_query_names_an_exported_metric(settings: Settings, local_env: Any) -> None:
    with running_gateway(temporal_settings(settings, local_env.client)) as url:
        exposition = httpx.get(f"{url}/metrics", timeout=30).text
    exported = _exported(exposition)
    wanted = {name for panel in _panels() for t in panel["targets"] for name in METRIC.findall(t["expr"])}
    assert wanted - exported == set()
    # the platform's figures came from Postgres and Temporal both
    assert 'loregate_metrics_source_up{source="temporal"} 1.0' in exposition
    assert 'loregate_metrics_source_up{source="postgres"} 1.0' in exposition

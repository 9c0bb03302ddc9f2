"""deploy/ is checked without Docker or a cluster: schemas, cross references, and settings names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from compose_spec import ComposeSpecification

from governance.config import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SETTINGS_VARS = {f"LOREGATE_{name.upper()}" for name in Settings.model_fields}


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose" / "docker-compose.yml").read_text())


def _k8s_objects() -> list[dict[str, Any]]:
    objects = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return objects


def test_compose_file_matches_the_compose_specification() -> None:
    spec = ComposeSpecification.model_validate(_compose())
    assert spec.services is not None and {"gateway-1", "gateway-2", "worker-1", "worker-2", "migrate"} <= set(
        spec.services
    )


def test_compose_dependencies_and_upstreams_name_real_services() -> None:
    services = _compose()["services"]
    for name, service in services.items():
        for dependency in service.get("depends_on", {}) or {}:
            assert dependency in services, f"{name} depends on unknown service {dependency}"
        assert "image" in service or "build" in service, name
    upstreams = re.findall(r"server ([\w-]+):8080", (DEPLOY / "compose" / "nginx.conf").read_text())
    assert sorted(upstreams) == ["gateway-1", "gateway-2"]


def test_compose_runs_two_gateways_and_two_workers_of_one_image() -> None:
    services = _compose()["services"]
    commands = [tuple(s.get("command", ())) for s in services.values() if s.get("image") == "loregate:latest"]
    assert commands.count(("serve",)) == 2 and commands.count(("worker",)) == 2


@pytest.mark.parametrize("obj", _k8s_objects(), ids=lambda o: f"{o['kind']}/{o['metadata']['name']}")
def test_kubernetes_object_is_valid(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, kubernetes_validate.utils.latest_version(), strict=True)


def test_kubernetes_gateway_is_ready_only_when_healthy_and_autoscaled() -> None:
    objects = {(o["kind"], o["metadata"]["name"]): o for o in _k8s_objects()}
    gateway = objects[("Deployment", "loregate-gateway")]["spec"]["template"]["spec"]["containers"][0]
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert gateway["resources"]["requests"] and gateway["resources"]["limits"]
    for name in ("loregate-gateway", "loregate-worker"):
        target = objects[("HorizontalPodAutoscaler", name)]["spec"]["scaleTargetRef"]
        assert ("Deployment", target["name"]) in objects
    jobs = {o["metadata"]["name"]: o for o in objects.values() if o["kind"] == "Job"}
    assert jobs["loregate-migrate"]["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    assert jobs["loregate-schedules"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "schedules",
        "apply",
    ]


def test_every_loregate_variable_in_deploy_is_a_setting() -> None:
    used: set[str] = set()
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            used |= set(re.findall(r"LOREGATE_[A-Z_]+", path.read_text()))
    unknown = used - SETTINGS_VARS
    assert not unknown, f"deploy/ uses variables the settings do not define: {sorted(unknown)}"


def test_dockerfile_copies_every_package_of_the_distribution() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    for package in ("governance", "policy", "activities", "workflows", "api", "migrations"):
        assert f"COPY {package} ./{package}" in dockerfile

"""The Kubernetes manifests in deploy/kubernetes/ against the Kubernetes schema of a named
version (kubernetes-validate's bundled schemas, strict: no unknown fields), and against
the image: every command they run is one the entry script knows, the one the
Containerfile starts by default too."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs published
import kubernetes_validate  # type: ignore[import-untyped]  # no py.typed marker
import pytest
import yaml
from deploy_support import ENTRYPOINT, ROOT

# The Kubernetes version whose schema the manifests must satisfy.
KUBERNETES_VERSION = "1.33.0"
MANIFESTS = ROOT / "deploy" / "kubernetes"
CONTAINERFILE = ROOT / "deploy" / "Containerfile"
SECRET_NAMES = {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}

# The parts of the Prometheus operator's ServiceMonitor (monitoring.coreos.com/v1) used
# here; its CRD is not in the Kubernetes schema.
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {"type": "object", "required": ["name"]},
        "spec": {
            "type": "object",
            "additionalProperties": False,
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": {
                    "type": "object",
                    "properties": {"matchLabels": {"type": "object"}},
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["port", "path", "authorization"],
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string", "pattern": "^/"},
                            "interval": {"type": "string", "pattern": "^[0-9]+[smh]$"},
                            "scrapeTimeout": {"type": "string", "pattern": "^[0-9]+[smh]$"},
                            # the operator's current field (bearerTokenSecret is deprecated)
                            "authorization": {
                                "type": "object",
                                "required": ["type", "credentials"],
                                "additionalProperties": False,
                                "properties": {
                                    "type": {"const": "Bearer"},
                                    "credentials": {
                                        "type": "object",
                                        "required": ["name", "key"],
                                        "additionalProperties": False,
                                        "properties": {
                                            "name": {"type": "string"},
                                            "key": {"type": "string"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _resources() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(MANIFESTS.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        found += [(str(path.relative_to(ROOT)), doc) for doc in _documents(path)]
    return found


def _pod_specs() -> list[tuple[str, dict[str, Any]]]:
    specs = []
    for _, doc in _resources():
        kind = doc["kind"]
        if kind in ("Deployment", "Job"):
            specs.append((f"{kind}/{doc['metadata']['name']}", doc["spec"]["template"]["spec"]))
        elif kind == "CronJob":
            spec = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
            specs.append((f"{kind}/{doc['metadata']['name']}", spec))
    return specs


def _by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in _resources() if doc["kind"] == kind}


def entry_commands() -> set[str]:
    """The commands ``deploy/entrypoint.sh`` knows (its ``case`` labels)."""
    labels = re.findall(r"^  ([a-z]+)\)$", ENTRYPOINT.read_text(), flags=re.MULTILINE)
    return set(labels)


@pytest.mark.parametrize(("name", "doc"), _resources(), ids=lambda v: str(v)[:60])
def test_every_manifest_is_valid_for_the_named_kubernetes_version(
    name: str, doc: dict[str, Any]
) -> None:
    if doc["kind"] == "ServiceMonitor":
        jsonschema.validate(doc, SERVICE_MONITOR_SCHEMA)
        return
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_a_broken_manifest_is_refused_by_the_validator() -> None:
    """The check is real: a misspelt field and a wrong type both fail it."""
    deployment = dict(_by_kind("Deployment")["yunikorn-dashboard-web"])
    misspelt = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(kubernetes_validate.ValidationError, match="replica"):
        kubernetes_validate.validate(misspelt, KUBERNETES_VERSION, strict=True)
    wrong_type = {**deployment, "spec": {**deployment["spec"], "replicas": "two"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    listed = set(kustomization["resources"])
    files = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == files
    component = yaml.safe_load((MANIFESTS / "servicemonitor" / "kustomization.yaml").read_text())
    assert component["kind"] == "Component"
    assert component["resources"] == ["servicemonitor.yaml"]


def test_the_processes_the_issue_names_are_there() -> None:
    """web and worker Deployments, beat as one replica replaced (never two at once),
    migrations as a Job, the pruner as a CronJob, a Service for the web pods."""
    deployments = _by_kind("Deployment")
    assert set(deployments) == {
        "yunikorn-dashboard-web",
        "yunikorn-dashboard-worker",
        "yunikorn-dashboard-poller",
        "yunikorn-dashboard-beat",
    }
    beat = deployments["yunikorn-dashboard-beat"]["spec"]
    assert (beat["replicas"], beat["strategy"]) == (1, {"type": "Recreate"})
    assert deployments["yunikorn-dashboard-web"]["spec"]["replicas"] == 2
    assert deployments["yunikorn-dashboard-worker"]["spec"]["replicas"] == 2
    assert list(_by_kind("Job")) == ["yunikorn-dashboard-migrate"]
    assert list(_by_kind("CronJob")) == ["yunikorn-dashboard-prune"]
    [service] = _by_kind("Service").values()
    web_labels = deployments["yunikorn-dashboard-web"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= web_labels.items()
    assert set(_by_kind("NetworkPolicy")) >= {"yunikorn-rest-api"}


def test_the_commands_in_the_manifests_are_the_ones_the_image_runs() -> None:
    """Every container runs the image's entry point (no command of its own) with one of
    the entry script's commands; the Containerfile starts that script, ``web`` by default."""
    known = entry_commands()
    assert known == {"web", "worker", "poller", "beat", "migrate", "prune", "manage"}
    used = {}
    for name, spec in _pod_specs():
        for container in spec["containers"]:
            assert "command" not in container, f"{name} overrides the image's entry point"
            assert container["args"][0] in known, f"{name} runs {container['args']}"
            used[name] = container["args"][0]
    assert used == {
        "Deployment/yunikorn-dashboard-web": "web",
        "Deployment/yunikorn-dashboard-worker": "worker",
        "Deployment/yunikorn-dashboard-poller": "poller",
        "Deployment/yunikorn-dashboard-beat": "beat",
        "Job/yunikorn-dashboard-migrate": "migrate",
        "CronJob/yunikorn-dashboard-prune": "prune",
    }
    containerfile = CONTAINERFILE.read_text()
    assert 'ENTRYPOINT ["/app/deploy/entrypoint.sh"]' in containerfile
    [default] = re.findall(r'^CMD \["([a-z]+)"\]$', containerfile, flags=re.MULTILINE)
    assert default in known
    # the files the entry script runs are copied into the image
    assert "COPY deploy/entrypoint.sh deploy/gunicorn.conf.py deploy/" in containerfile
    assert "deploy/gunicorn.conf.py" in ENTRYPOINT.read_text()


def test_the_containers_run_as_non_root_with_secrets_by_reference() -> None:
    """Non-root, read-only root file system, no privilege escalation; SECRET_KEY, the
    database and the broker URLs from the Secret (secretKeyRef), never written out."""
    configmap = _by_kind("ConfigMap")["yunikorn-dashboard"]
    assert not SECRET_NAMES & set(configmap["data"])
    for name, spec in _pod_specs():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            env = {e["name"]: e for e in container["env"]}
            for secret in SECRET_NAMES:
                assert "value" not in env[secret], f"{name} writes {secret} out"
                assert env[secret]["valueFrom"]["secretKeyRef"]["name"] == "yunikorn-dashboard"
    assert "USER 10001:0" in CONTAINERFILE.read_text()


def test_the_web_pods_are_probed_on_livez_and_readyz() -> None:
    [container] = _by_kind("Deployment")["yunikorn-dashboard-web"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_only_the_poller_reaches_the_yunikorn_rest_api() -> None:
    policy = _by_kind("NetworkPolicy")["yunikorn-rest-api"]["spec"]
    rest_api = {"port": 9080, "protocol": "TCP"}
    rest = [rule for rule in policy["ingress"] if rest_api in rule["ports"]]
    [rule] = rest
    sources = [peer["podSelector"]["matchLabels"] for peer in rule["from"]]
    assert {
        "app.kubernetes.io/name": "yunikorn-dashboard",
        "app.kubernetes.io/component": "poller",
    } in sources
    configmap = _by_kind("ConfigMap")["yunikorn-dashboard"]["data"]
    assert configmap["SOURCES_POLL_QUEUE"] == "polls"


def test_a_kubernetes_version_is_named_that_the_validator_has() -> None:
    versions = set(kubernetes_validate.utils.all_versions())
    assert KUBERNETES_VERSION in versions

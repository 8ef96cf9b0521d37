"""The Kubernetes manifests in deploy/kubernetes/ as kustomize renders them (``kubectl
kustomize``, the ServiceMonitor component included), against the Kubernetes schema of a
named version (kubernetes-validate's bundled schemas, strict: no unknown fields), against
the image (every command they run is one the entry script knows), and against the
documented install: the commands of docs/operations/deployment.md, followed on the
rendered objects."""

from __future__ import annotations

import functools
import ipaddress
import os
import re
import shutil
import subprocess
import tempfile
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
LOCK = ROOT / "deploy" / "requirements.lock"
REQUIREMENTS = ROOT / "requirements.txt"
DEPLOYMENT_DOC = ROOT / "docs" / "operations" / "deployment.md"
IMAGE = "yunikorn-preemption-dashboard"
CELERY_PROCESSES = {"worker": 60, "poller": 60, "deliveries": 60, "beat": 120}
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


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize DIRECTORY`` renders (kustomize built into kubectl)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl (its built-in kustomize renders the manifests) is not installed")
    done = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def _overlay(folder: Path, **fields: Any) -> Path:
    """A kustomization in *folder* over deploy/kubernetes (relative paths: kustomize
    refuses absolute ones) with the ServiceMonitor component and *fields*."""
    base = os.path.relpath(MANIFESTS, folder)
    overlay = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base],
        "components": [f"{base}/servicemonitor"],
        **fields,
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    return folder


@functools.cache
def rendered() -> tuple[dict[str, Any], ...]:
    """deploy/kubernetes rendered with the optional ServiceMonitor component."""
    with tempfile.TemporaryDirectory() as tmp:
        return tuple(kustomize(_overlay(Path(tmp))))


def _resources() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{doc['kind']}/{doc['metadata']['name']}", doc) for doc in rendered()]


def _pod_template(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc["kind"] in ("Deployment", "Job"):
        return dict(doc["spec"]["template"])
    if doc["kind"] == "CronJob":
        return dict(doc["spec"]["jobTemplate"]["spec"]["template"])
    return None


def _pod_specs() -> list[tuple[str, dict[str, Any]]]:
    specs = []
    for name, doc in _resources():
        template = _pod_template(doc)
        if template is not None:
            specs.append((name, template["spec"]))
    return specs


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("initContainers", [])) + list(spec["containers"])


def _by_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in rendered() if doc["kind"] == kind}


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
    """web, worker, poller and deliveries Deployments, beat as one replica replaced (never
    two at once), the migration as the web pods' init container (no Job to apply by
    hand), the pruner as a CronJob, a Service for the web pods."""
    deployments = _by_kind("Deployment")
    assert set(deployments) == {
        "yunikorn-dashboard-web",
        "yunikorn-dashboard-worker",
        "yunikorn-dashboard-poller",
        "yunikorn-dashboard-deliveries",
        "yunikorn-dashboard-beat",
    }
    beat = deployments["yunikorn-dashboard-beat"]["spec"]
    assert (beat["replicas"], beat["strategy"]) == (1, {"type": "Recreate"})
    assert deployments["yunikorn-dashboard-web"]["spec"]["replicas"] == 2
    assert deployments["yunikorn-dashboard-worker"]["spec"]["replicas"] == 2
    assert _by_kind("Job") == {}
    assert list(_by_kind("CronJob")) == ["yunikorn-dashboard-prune"]
    [service] = _by_kind("Service").values()
    web_labels = deployments["yunikorn-dashboard-web"]["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= web_labels.items()


def test_the_commands_in_the_manifests_are_the_ones_the_image_runs() -> None:
    """Every container runs the image's entry point (no command of its own) with one of
    the entry script's commands; the Containerfile starts that script, ``web`` by default."""
    known = entry_commands()
    assert known == {
        "web",
        "worker",
        "poller",
        "deliveries",
        "beat",
        "migrate",
        "prune",
        "manage",
        "alive",
    }
    used = {}
    for name, spec in _pod_specs():
        for container in _containers(spec):
            assert "command" not in container, f"{name} overrides the image's entry point"
            assert container["args"][0] in known, f"{name} runs {container['args']}"
            used[f"{name}/{container['name']}"] = container["args"][0]
    assert used == {
        "Deployment/yunikorn-dashboard-web/migrate": "migrate",
        "Deployment/yunikorn-dashboard-web/web": "web",
        "Deployment/yunikorn-dashboard-worker/worker": "worker",
        "Deployment/yunikorn-dashboard-poller/poller": "poller",
        "Deployment/yunikorn-dashboard-deliveries/deliveries": "deliveries",
        "Deployment/yunikorn-dashboard-beat/beat": "beat",
        "CronJob/yunikorn-dashboard-prune/prune": "prune",
    }
    containerfile = CONTAINERFILE.read_text()
    assert 'ENTRYPOINT ["/app/deploy/entrypoint.sh"]' in containerfile
    [default] = re.findall(r'^CMD \["([a-z]+)"\]$', containerfile, flags=re.MULTILINE)
    assert default in known
    # the files the entry script runs are copied into the image
    assert "COPY deploy/entrypoint.sh deploy/gunicorn.conf.py deploy/" in containerfile
    assert "COPY dashboard/ dashboard/" in containerfile  # dashboard/heartbeat.py: alive
    assert "deploy/gunicorn.conf.py" in ENTRYPOINT.read_text()


def test_the_containers_run_as_non_root_with_secrets_by_reference() -> None:
    """Non-root, read-only root file system, no privilege escalation; SECRET_KEY, the
    database and the broker URLs from the Secret (secretKeyRef), never written out;
    init containers too."""
    configmap = _by_kind("ConfigMap")["yunikorn-dashboard"]
    assert not SECRET_NAMES & set(configmap["data"])
    for name, spec in _pod_specs():
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in _containers(spec):
            security = container["securityContext"]
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["allowPrivilegeEscalation"] is False, name
            env = {e["name"]: e for e in container["env"]}
            for secret in SECRET_NAMES:
                assert "value" not in env[secret], f"{name} writes {secret} out"
                assert env[secret]["valueFrom"]["secretKeyRef"]["name"] == "yunikorn-dashboard"
    assert "USER 10001:0" in CONTAINERFILE.read_text()


def test_every_container_has_requests_and_a_memory_limit() -> None:
    """The migration (init container) and the prune CronJob included."""
    seen = []
    for name, spec in _pod_specs():
        for container in _containers(spec):
            resources = container.get("resources", {})
            where = f"{name}/{container['name']}"
            assert {"cpu", "memory"} <= set(resources.get("requests", {})), where
            assert "memory" in resources.get("limits", {}), where
            seen.append(where)
    assert "Deployment/yunikorn-dashboard-web/migrate" in seen
    assert "CronJob/yunikorn-dashboard-prune/prune" in seen


def test_the_web_pods_are_probed_on_livez_and_readyz() -> None:
    spec = _by_kind("Deployment")["yunikorn-dashboard-web"]["spec"]["template"]["spec"]
    [container] = spec["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_the_celery_processes_are_probed_on_their_heartbeat() -> None:
    """Worker, poller, deliveries and beat: an exec probe of the entry script's ``alive``
    command with the process's own name and a maximum age well above the interval at
    which it touches its file (2 s heartbeats; beat's 5 s sweep ticks)."""
    deployments = _by_kind("Deployment")
    for name, max_age in CELERY_PROCESSES.items():
        spec = deployments[f"yunikorn-dashboard-{name}"]["spec"]["template"]["spec"]
        [container] = spec["containers"]
        assert container["args"] == [name]
        expected = ["/app/deploy/entrypoint.sh", "alive", name, str(max_age)]
        for probe in ("startupProbe", "livenessProbe"):
            assert container[probe]["exec"]["command"] == expected, (name, probe)
        liveness = container["livenessProbe"]
        # a restart only after the file is older than the maximum age, twice in a row
        assert liveness["failureThreshold"] >= 2
        assert max_age >= 10 * 5, name


def test_web_survives_a_node_drain() -> None:
    """A PodDisruptionBudget selecting the web pods keeps one of the two; the replicas
    prefer different nodes."""
    web = _by_kind("Deployment")["yunikorn-dashboard-web"]
    labels = web["spec"]["template"]["metadata"]["labels"]
    [budget] = _by_kind("PodDisruptionBudget").values()
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"]["minAvailable"] == 1 < web["spec"]["replicas"]
    [term] = web["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = policy["spec"]["podSelector"]
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        assert expression["operator"] == "In"
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def test_no_network_policy_selects_yunikorns_pods() -> None:
    """A policy on the scheduler pod would cut its metrics scrape and its admission
    controller (host network); the manifests leave YuniKorn's pods alone."""
    for name, policy in _by_kind("NetworkPolicy").items():
        selector = policy["spec"]["podSelector"]
        assert selector, f"{name} selects every pod of the namespace, YuniKorn's too"
        for yunikorn in ("yunikorn-scheduler", "yunikorn-admission-controller"):
            assert not _selects(policy, {"app": "yunikorn", "component": yunikorn}), name
    assert "yunikorn-rest-api" not in _by_kind("NetworkPolicy")
    assert "validate-conf" in DEPLOYMENT_DOC.read_text()  # what to add instead


def test_every_dashboard_pod_has_its_ingress_and_egress_limited() -> None:
    """Each pod template is selected by an Ingress and an Egress policy; all may reach
    DNS; only the poller may reach YuniKorn's 9080; only deliveries reach HTTPS/SMTP."""
    policies = _by_kind("NetworkPolicy").values()
    for name, doc in _resources():
        template = _pod_template(doc)
        if template is None:
            continue
        labels = template["metadata"]["labels"]
        mine = [p for p in policies if _selects(p, labels)]
        types = {t for p in mine for t in p["spec"]["policyTypes"]}
        assert types == {"Ingress", "Egress"}, (name, types)
        egress = [rule for p in mine for rule in p["spec"].get("egress", [])]
        ports = {(port["port"], port["protocol"]) for r in egress for port in r["ports"]}
        assert {(53, "UDP"), (53, "TCP"), (5432, "TCP"), (6379, "TCP")} <= ports, name
        component = labels["app.kubernetes.io/component"]
        assert ((9080, "TCP") in ports) == (component == "poller"), name
        assert ((443, "TCP") in ports) == (component == "deliveries"), name
    [poller_rule] = _by_kind("NetworkPolicy")["yunikorn-dashboard-poller-egress"]["spec"]["egress"]
    assert poller_rule["to"] == [
        {"podSelector": {"matchLabels": {"app": "yunikorn", "component": "yunikorn-scheduler"}}}
    ]


def test_sources_and_webhooks_are_limited_to_the_private_networks() -> None:
    """SOURCES_ALLOWED_NETWORKS is set, each entry a network the settings parse."""
    value = _by_kind("ConfigMap")["yunikorn-dashboard"]["data"]["SOURCES_ALLOWED_NETWORKS"]
    networks = [ipaddress.ip_network(v.strip()) for v in value.split(",")]
    assert ipaddress.ip_network("10.0.0.0/8") in networks
    assert all(n.is_private for n in networks)
    configmap = _by_kind("ConfigMap")["yunikorn-dashboard"]["data"]
    assert configmap["SOURCES_POLL_QUEUE"] == "polls"
    assert configmap["ALERT_DELIVERY_QUEUE"] == "deliveries"


def _documented_commands() -> list[str]:
    """The kubectl commands of the install steps (continuation lines joined)."""
    text = DEPLOYMENT_DOC.read_text().replace("\\\n", " ")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return [" ".join(line.split()) for line in lines if line.startswith("kubectl ")]


def test_the_documented_install_works_on_the_rendered_objects(tmp_path: Path) -> None:
    """Step 1 (the image in the kustomization) then step 4 (apply -k, wait, exec):
    rendered by kustomize, the image override reaches every container and init
    container; no step applies a file by hand; every object and container a command
    names is rendered."""
    commands = _documented_commands()
    assert any(" apply -k deploy/kubernetes" in c for c in commands), commands
    assert not [c for c in commands if re.search(r" apply .*-f ", c)], commands
    # step 1: the kustomization's images entry, as the document says to set it
    copy = tmp_path / "kubernetes"
    shutil.copytree(MANIFESTS, copy)
    kustomization = yaml.safe_load((copy / "kustomization.yaml").read_text())
    kustomization["images"] = [
        {"name": IMAGE, "newName": f"registry.example.org/team/{IMAGE}", "newTag": "2.4.1"}
    ]
    (copy / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    objects = kustomize(copy)
    images = {
        f"{doc['kind']}/{doc['metadata']['name']}/{c['name']}": c["image"]
        for doc in objects
        if (template := _pod_template(doc)) is not None
        for c in _containers(template["spec"])
    }
    assert len(images) == 7
    assert set(images.values()) == {f"registry.example.org/team/{IMAGE}:2.4.1"}, images
    for doc in objects:
        if doc["kind"] != "ServiceMonitor":
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    # the objects the commands wait for and exec into
    by_name = {(doc["kind"], doc["metadata"]["name"]): doc for doc in objects}
    kinds = {"deployment": "Deployment", "job": "Job"}
    named = 0
    for command in commands:
        for kind, name in re.findall(r" (deployment|job)/([a-z0-9-]+)", command):
            assert (kinds[kind], name) in by_name, command
            named += 1
            container = re.search(r" -c ([a-z0-9-]+)", command)
            if container:
                template = _pod_template(by_name[(kinds[kind], name)])
                assert template is not None
                assert container.group(1) in {c["name"] for c in template["spec"]["containers"]}
    assert named >= 2


def test_a_kubernetes_version_is_named_that_the_validator_has() -> None:
    versions = set(kubernetes_validate.utils.all_versions())
    assert KUBERNETES_VERSION in versions


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lock() -> dict[str, tuple[str, list[str]]]:
    """deploy/requirements.lock: name -> (version, its hashes)."""
    text = LOCK.read_text().replace("\\\n", " ")
    found = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)\s*(.*)$", line)
        assert match, f"not a pinned requirement: {line!r}"
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", match.group(3))
        found[_normalised(match.group(1))] = (match.group(2), hashes)
    return found


def test_the_lock_agrees_with_the_pins_of_requirements_txt() -> None:
    """Every pin of requirements.txt is in the lock at the same version; every locked
    package (those pins and what they need) carries at least one sha256 hash."""
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pin = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^\]]+\])?==(\S+)", line)
            assert pin, f"requirements.txt: not a pin: {line!r}"
            pins[_normalised(pin.group(1))] = pin.group(2)
    lock = _lock()
    assert len(pins) > 20
    for name, version in pins.items():
        assert name in lock, f"{name} is pinned in requirements.txt but not in the lock"
        assert lock[name][0] == version, f"{name}: requirements.txt {version}, lock {lock[name][0]}"
    assert all(hashes for _, hashes in lock.values())
    assert "psycopg-binary" in lock  # an extra's requirement is locked too


def test_the_image_is_built_from_a_digest_with_hashed_requirements() -> None:
    containerfile = CONTAINERFILE.read_text()
    [base] = re.findall(r"^ARG BASE=(\S+)$", containerfile, flags=re.MULTILINE)
    assert re.fullmatch(r"docker\.io/library/python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base)
    froms = re.findall(r"^FROM (\S+)", containerfile, flags=re.MULTILINE)
    assert froms == ["$BASE", "$BASE"]
    installs = re.findall(r"^RUN .*pip install (.*)$", containerfile, flags=re.MULTILINE)
    assert installs == ["--require-hashes --no-deps -r /tmp/requirements.lock"]
    assert "COPY deploy/requirements.lock /tmp/requirements.lock" in containerfile
    assert "requirements.txt" not in containerfile

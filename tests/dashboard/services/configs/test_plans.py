"""Config rollout plans through the service, the API, the command and the page.

The acme-ml fixtures: the live config and the state dump are imported, then the
proposed config is planned.  A plan stores nothing (every row count is the same
afterwards); keeping it stores a version marked planned that never becomes the
config in force; scheduling it saves the quota changes through the scheduling
service; every POST needs a staff user (viewers get 403 and nothing changes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.importers.config import parse_config
from dashboard.importers.snapshot import parse_snapshot
from dashboard.planning import in_force_from_spec, plan_config
from engine.scenario import parse_scenario

FIXTURES = Path(settings.DASHBOARD_FIXTURES_DIR)
CONFIG = FIXTURES / "config"
PROPOSED = CONFIG / "queues-nested-gpu-proposed.yaml"
NOW = datetime(2026, 9, 1, 10, 0, 0, tzinfo=UTC)


@pytest.fixture
def acme(db: None) -> models.Partition:
    """The live config (v1) and the state dump of acme-ml, imported."""
    services.import_config((CONFIG / "queues-nested-gpu.yaml").read_bytes(), now=NOW)
    rest = FIXTURES / "rest" / "fullstatedump.json"
    services.import_snapshot({"fullstatedump.json": rest.read_bytes()}, now=NOW)
    return models.Partition.objects.get(name="default")


def _stored() -> dict[str, int]:
    return {
        m.__name__: m.objects.count()
        for m in (
            models.Partition,
            models.ConfigVersion,
            models.ConfigQueue,
            models.ClusterSnapshot,
            models.AllocationSpan,
            models.QuotaChange,
            models.PreemptionRun,
            models.RunVictim,
            models.Alert,
        )
    }


@pytest.fixture
def nothing_stored(acme: models.Partition) -> Iterator[None]:
    before = _stored()
    yield
    assert _stored() == before


def test_service_plan_equals_the_pure_core(acme: models.Partition, nothing_stored: None) -> None:
    """The stored config and snapshot give the same plan as the fixtures read directly."""
    plan = services.plan_proposed_config(PROPOSED.read_bytes(), now=NOW)
    parsed = parse_snapshot(
        {"fullstatedump.json": (FIXTURES / "rest" / "fullstatedump.json").read_bytes()}
    )
    cluster = parse_scenario(
        {**parsed.scenario, "request": {"type": "resources", "queue": "root"}}
    ).cluster
    direct = plan_config(
        PROPOSED.read_bytes(),
        in_force=in_force_from_spec(
            parse_config((CONFIG / "queues-nested-gpu.yaml").read_bytes()).partition()
        ),
        cluster=cluster,
        now=NOW.timestamp(),
    )
    assert plan.to_dict()["changes"] == direct.to_dict()["changes"]
    assert [c.queue for c in plan.firings] == ["root.batch", "root.research", "root.research.nlp"]


def test_planned_version_is_never_in_force(acme: models.Partition) -> None:
    """Keeping stores a planned version; the config in force and the flag stay as they were."""
    live = services.latest_config(acme)
    assert live is not None
    version = services.keep_planned_config(PROPOSED.read_bytes(), now=NOW)
    assert version.planned
    assert version.number == live.number + 1
    assert version.queues.filter(path="root.batch").get().max == {
        "vcore": 8000,
        "memory": 40 * 2**30,
    }
    assert services.latest_config(acme) == live
    assert models.QuotaChange.objects.count() == 0
    # the live config imported again is the version in force: nothing is stored, and the
    # planned version does not become the config in force
    result = services.import_config((CONFIG / "queues-nested-gpu.yaml").read_bytes())
    assert (result.versions, result.unchanged, result.changes) == ((live,), (live.pk,), ())
    assert services.latest_config(acme) == live
    # and a plan made after keeping still compares against the live config
    plan = services.plan_proposed_config(PROPOSED.read_bytes(), now=NOW)
    assert {c.queue for c in plan.changes} == {"root.batch", "root.research", "root.research.nlp"}


def test_schedule_saves_the_changes_through_the_scheduling_service(
    acme: models.Partition,
) -> None:
    result = services.schedule_planned_config(PROPOSED.read_bytes(), now=NOW)
    by_queue = {c.queue_path: c for c in result.changes}
    assert set(by_queue) == {"root.batch", "root.research", "root.research.nlp"}
    for change in by_queue.values():
        assert change.state == models.QuotaChange.State.WAITING
    assert by_queue["root.batch"].new_max == {"vcore": 8000, "memory": 40 * 2**30}
    assert by_queue["root.research"].delay == 900.0
    assert by_queue["root.research.nlp"].deadline == datetime(2026, 9, 1, 10, 15, tzinfo=UTC)
    # planned in the dashboard, not in the cluster: the plan against the scheduler's config
    # in force still has every change to make, and no timer waits there yet
    plan = services.plan_proposed_config(PROPOSED.read_bytes(), now=NOW)
    assert {c.queue for c in plan.changes} == set(by_queue)
    assert plan.pending == ()
    # once a config read from the cluster shows them, they are in force with their timers
    services.import_config(PROPOSED.read_bytes(), now=NOW)
    plan = services.plan_proposed_config(PROPOSED.read_bytes(), now=NOW)
    assert plan.changes == ()
    assert [c.queue for c in plan.pending] == ["root.batch", "root.research", "root.research.nlp"]


def test_refused_config_stores_nothing_and_names_the_line(
    acme: models.Partition, nothing_stored: None
) -> None:
    bad = (CONFIG / "invalid" / "guaranteed-above-max.yaml").read_bytes()
    plan = services.plan_proposed_config(bad, now=NOW)
    (refusal,) = plan.refusals
    assert refusal.line is not None
    with pytest.raises(services.ServiceError, match=f"line {refusal.line}"):
        services.keep_planned_config(bad, now=NOW)
    with pytest.raises(services.ServiceError, match=f"line {refusal.line}"):
        services.schedule_planned_config(bad, now=NOW)


# -- API --------------------------------------------------------------------------------


def test_api_plan_stores_nothing(staff_client: APIClient, nothing_stored: None) -> None:
    with PROPOSED.open("rb") as fh:
        response = staff_client.post(
            "/api/plans/", {"file": fh, "partition": "default"}, format="multipart"
        )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["firings"] == ["root.batch", "root.research", "root.research.nlp"]
    assert {"changes", "warnings", "totals"} <= set(body)
    as_text = staff_client.post("/api/plans/", {"text": PROPOSED.read_text()}, format="json")
    assert as_text.status_code == 200
    assert as_text.json()["firings"] == body["firings"]
    assert as_text.json()["totals"] == body["totals"]


def test_api_refuses_anonymous(anon_client: APIClient, acme: models.Partition) -> None:
    response = anon_client.post("/api/plans/", {"text": PROPOSED.read_text()}, format="json")
    assert response.status_code in (401, 403)


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        ({}, "file", "upload the proposed config"),
        ({"text": "   "}, "text", "empty"),
        ({"text": "x: [", "partition": "nope"}, "partition", "unknown partition 'nope'"),
        ({"text": "partitions: []", "cluster": "prod"}, "cluster", "no cluster 'prod'"),
    ],
)
def test_api_bad_input_is_400_naming_the_problem(
    staff_client: APIClient,
    acme: models.Partition,
    nothing_stored: None,
    payload: dict[str, str],
    field: str,
    words: str,
) -> None:
    response = staff_client.post("/api/plans/", payload, format="json")
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])


def test_api_refused_config_is_400_with_reason_and_line(
    staff_client: APIClient, acme: models.Partition, nothing_stored: None
) -> None:
    bad = (CONFIG / "invalid" / "child-max-above-parent-max.yaml").read_text()
    response = staff_client.post("/api/plans/", {"text": bad}, format="json")
    assert response.status_code == 400
    body = response.json()
    (refusal,) = body["refusals"]
    assert refusal["line"] > 0
    assert body["config"] == [f"line {refusal['line']}: {refusal['reason']}"]
    assert body["changes"] == []


def test_api_plans_need_staff(
    viewer_client: APIClient, staff_client: APIClient, acme: models.Partition
) -> None:
    """Every POST of /api/plans/ needs a staff user, also those that store nothing."""
    before = _stored()
    for url in ("/api/plans/", "/api/plans/handback/", "/api/plans/keep/", "/api/plans/schedule/"):
        response = viewer_client.post(url, {"text": PROPOSED.read_text()}, format="json")
        assert response.status_code == 403, url
    assert _stored() == before
    kept = staff_client.post("/api/plans/keep/", {"text": PROPOSED.read_text()}, format="json")
    assert kept.status_code == 201
    assert models.ConfigVersion.objects.get(pk=kept.json()["id"]).planned
    scheduled = staff_client.post(
        "/api/plans/schedule/", {"text": PROPOSED.read_text()}, format="json"
    )
    assert scheduled.status_code == 201
    assert {c["queue"] for c in scheduled.json()["changes"]} == {
        "root.batch",
        "root.research",
        "root.research.nlp",
    }


def test_api_handback_gives_configmap_and_kubectl_patch(
    staff_client: APIClient, acme: models.Partition, nothing_stored: None
) -> None:
    response = staff_client.post(
        "/api/plans/handback/", {"text": PROPOSED.read_text()}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["kubectl_patch"].startswith("kubectl patch configmap yunikorn-configs -n yunikorn")
    assert "vcore: 8, memory: 40Gi" in body["configmap"]
    batch = parse_config(body["configmap"]).partition().queue("root.batch")
    assert batch is not None
    assert batch.max == {"vcore": 8000, "memory": 40 * 2**30}


# -- command --------------------------------------------------------------------------------


def test_command_prints_the_plan_json(acme: models.Partition, nothing_stored: None) -> None:
    out = StringIO()
    call_command("plan_config", str(PROPOSED), "--partition", "default", stdout=out)
    doc = json.loads(out.getvalue())
    assert doc["firings"] == ["root.batch", "root.research", "root.research.nlp"]
    assert doc["totals"]["allocations"] == 2


def test_command_refused_config_prints_refusals_and_fails(
    acme: models.Partition, nothing_stored: None
) -> None:
    out = StringIO()
    bad = CONFIG / "invalid" / "quota-delay-under-resources.yaml"
    with pytest.raises(CommandError, match="would refuse it: line"):
        call_command("plan_config", str(bad), stdout=out)
    assert json.loads(out.getvalue())["refusals"][0]["line"] > 0


@pytest.mark.subprocess
def test_command_exports_a_firing_for_python_m_engine(
    acme: models.Partition, tmp_path: Path
) -> None:
    """--scenario 2: research's firing (the scheduler's walk starts it before nlp, due in
    the same second), with batch's victim already preempted, as the engine CLI."""
    out = StringIO()
    call_command("plan_config", str(PROPOSED), "--scenario", "2", stdout=out)
    scenario = json.loads(out.getvalue())
    assert scenario["request"]["queue"] == "root.research"
    plan = json.loads(_command_json())
    (batch_victim,) = plan["changes"][0]["victims"]
    assert next(a for a in scenario["allocations"] if a["key"] == batch_victim)["preempted"]
    path = tmp_path / "firing.json"
    path.write_text(out.getvalue())
    done = subprocess.run(
        [sys.executable, "-m", "engine", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[4],
    )
    assert json.loads(done.stdout)["victims"] == plan["changes"][1]["victims"]
    with pytest.raises(CommandError, match="no firing 4 runs a quota preemption"):
        call_command("plan_config", str(PROPOSED), "--scenario", "4", stdout=StringIO())


def _command_json() -> str:
    out = StringIO()
    call_command("plan_config", str(PROPOSED), stdout=out)
    return out.getvalue()


def test_command_unknown_partition_fails(acme: models.Partition) -> None:
    with pytest.raises(CommandError, match="unknown partition 'gpu'"):
        call_command("plan_config", str(PROPOSED), "--partition", "gpu", stdout=StringIO())


# -- page -----------------------------------------------------------------------------------


def _page_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_page_plans_and_shows_tree_timeline_and_victims(
    staff: Any, acme: models.Partition, nothing_stored: None
) -> None:
    client = _page_client(staff)
    form = client.get("/plans/?partition=default&edit=current")
    assert form.status_code == 200
    assert "max: {vcore: 10, memory: 48Gi}" in form.content.decode()  # the current config
    response = client.post(
        "/plans/", {"partition": "default", "text": PROPOSED.read_text(), "action": "plan"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    for marker in (
        'id="plan-tree-figure"',
        'id="plan-timeline-figure"',
        'data-testid="plan-victims"',
    ):
        assert marker in html
    assert "fires #1, preempts 1 allocation" in html
    assert 'data-testid="plan-leaf-totals"' in html


def test_page_needs_sign_in(acme: models.Partition) -> None:
    response = Client().get("/plans/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_kept_version_page_says_planned(staff: Any, acme: models.Partition) -> None:
    version = services.keep_planned_config(PROPOSED.read_bytes(), now=NOW)
    html = _page_client(staff).get(f"/configs/{version.pk}/").content.decode()
    assert 'data-testid="planned-badge"' in html
    assert "not the config in force" in html


def test_page_upload_plans_the_file(staff: Any, acme: models.Partition) -> None:
    client = _page_client(staff)
    upload = SimpleUploadedFile("proposed.yaml", PROPOSED.read_bytes())
    response = client.post(
        "/plans/", {"partition": "default", "text": "", "file": upload, "action": "plan"}
    )
    assert response.status_code == 200
    assert "root.research.nlp" in response.content.decode()


def test_page_viewer_sees_the_page_but_cannot_post(viewer: Any, acme: models.Partition) -> None:
    client = _page_client(viewer)
    page = client.get("/plans/?partition=default")
    assert page.status_code == 200
    assert 'data-testid="plan-staff-only"' in page.content.decode()
    assert 'data-testid="plan-submit"' not in page.content.decode()
    before = _stored()
    for action in ("plan", "handback", "keep", "schedule"):
        response = client.post(
            "/plans/", {"partition": "default", "text": PROPOSED.read_text(), "action": action}
        )
        assert response.status_code == 403
    assert _stored() == before


def test_page_staff_keeps_and_schedules(staff: Any, acme: models.Partition) -> None:
    client = _page_client(staff)
    kept = client.post(
        "/plans/", {"partition": "default", "text": PROPOSED.read_text(), "action": "keep"}
    )
    assert kept.status_code == 302
    version = models.ConfigVersion.objects.get(planned=True)
    assert kept["Location"] == f"/configs/{version.pk}/"
    scheduled = client.post(
        "/plans/", {"partition": "default", "text": PROPOSED.read_text(), "action": "schedule"}
    )
    assert scheduled.status_code == 302
    assert models.QuotaChange.objects.filter(state=models.QuotaChange.State.WAITING).count() == 3


def test_page_form_needs_csrf(staff: Any, acme: models.Partition) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    response = client.post(
        "/plans/", {"partition": "default", "text": PROPOSED.read_text(), "action": "keep"}
    )
    assert response.status_code == 403
    assert not models.ConfigVersion.objects.filter(planned=True).exists()


def test_page_refusal_shows_the_line(staff: Any, acme: models.Partition) -> None:
    bad = (CONFIG / "invalid" / "child-max-above-parent-max.yaml").read_text()
    response = _page_client(staff).post(
        "/plans/", {"partition": "default", "text": bad, "action": "plan"}
    )
    html = response.content.decode()
    assert 'data-testid="plan-refusals"' in html
    assert 'data-testid="refusal-line">line ' in html


def test_snapshot_now_leaves_a_deferred_scenario_unread(acme: models.Partition) -> None:
    """A plan reads the snapshot row without its stored document; its now costs one field."""
    full = models.ClusterSnapshot.objects.get()
    deferred = models.ClusterSnapshot.objects.defer("scenario").get()
    assert services.snapshot_now(deferred) == services.snapshot_now(full)
    assert "scenario" not in deferred.__dict__


def test_page_lists_at_most_200_victims_per_firing(staff: Any, db: None) -> None:
    """A firing with 250 victims shows 200 of them and says how many more there are."""
    services.import_config(CHAIN_CONFIG.encode(), now=NOW)
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=NOW,
        scenario={
            "now": NOW.timestamp(),
            "queues": {"name": "root", "children": [{"name": "a"}]},
            "nodes": [{"id": "n1", "capacity": {"vcore": 10**9}}],
            "allocations": [
                {"key": f"k{i:03d}", "queue": "root.a", "node": "n1", "resources": {"vcore": 1000}}
                for i in range(300)
            ],
        },
        alert_warnings=False,
    )
    # rule set seed: a newly set max is a decrease (under scheduler, a raise: no timer)
    models.Partition.objects.update(timer_rules="seed")
    proposed = CHAIN_CONFIG.replace(
        "          - name: a\n", "          - name: a\n            resources: {max: {vcore: 50}}\n"
    )
    response = _page_client(staff).post(
        "/plans/", {"partition": "default", "text": proposed, "action": "plan"}
    )
    html = response.content.decode()
    assert "… and 50 more" in html
    assert html.count('<td class="mono">k') == 200


CHAIN_CONFIG = """partitions:
  - name: default
    preemption: {quotapreemptionenabled: true}
    queues:
      - name: root
        properties: {quota.preemption.delay: 1m}
        queues:
          - name: a
"""


def test_api_shows_planned_versions_and_keeps_the_one_in_force(
    staff_client: APIClient, staff: Any, acme: models.Partition
) -> None:
    live = services.latest_config(acme)
    assert live is not None
    kept = services.keep_planned_config(PROPOSED.read_bytes(), now=NOW)
    versions = staff_client.get("/api/configs/").json()["results"]
    assert {(v["id"], v["planned"]) for v in versions} == {(live.pk, False), (kept.pk, True)}
    (partition,) = staff_client.get("/api/partitions/").json()["results"]
    assert partition["latest_config"] == live.pk
    # the kept version's page diffs against the config in force before it, never a planned one
    again = services.keep_planned_config(PROPOSED.read_bytes(), now=NOW)
    html = _page_client(staff).get(f"/configs/{again.pk}/").content.decode()
    assert f"Diff against v{live.number}" in html

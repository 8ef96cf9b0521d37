"""The scheduler's own health and build, read with every poll: ``/ws/v1/scheduler/healthcheck``
and ``/ws/v1/clusters`` (shapes of yunikorn-core's ``dao.SchedulerHealthDAOInfo`` and
``dao.ClusterDAOInfo``), stored on the source, shown on the tree page, and one alert while
a check fails, cleared when it passes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard.importers.errors import ImportFailure
from dashboard.sources import health as health_mod
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

HEALTH = "/ws/v1/scheduler/healthcheck"
CLUSTERS = "/ws/v1/clusters"
STARTED_NS = 1_788_200_000_000_000_000


def healthcheck(*failing: tuple[str, str]) -> dict[str, Any]:
    """A healthcheck answer: three checks, *failing* ones (name, diagnosis) not succeeded."""
    diagnosis = dict(failing)
    checks: list[dict[str, Any]] = []
    for name in ("Scheduling errors", "Negative resources", "Orphan allocations on node"):
        check = {"Name": name, "Succeeded": name not in diagnosis}
        check["Description"] = f"Check for {name.lower()}"
        if name in diagnosis:
            check["DiagnosisMessage"] = diagnosis[name]
        checks.append(check)
    return {"Healthy": not failing, "HealthChecks": checks}


CLUSTERS_ANSWER = [
    {
        "startTime": STARTED_NS,
        "rmBuildInformation": [
            {"buildVersion": "1.7.0", "buildDate": "2026-10-01T08:00:00+0000", "rmId": "rm-1"}
        ],
        "partition": "default",
        "clusterName": "kubernetes",
    }
]


def make_source(yunikorn: FakeYuniKorn) -> ClusterSource:
    return ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, partition="default", poll_interval=60
    )


def poll(source: ClusterSource, at: datetime) -> services.PollOutcome:
    return services.poll_source(
        source.pk,
        now=at,
        force=True,
        fetch=services.default_fetcher(sleep=SleepRecorder()),
        health=health_mod.default_path_fetcher(services.fetch_policy()),
    )


def alerts(kind: str) -> list[dm.Alert]:
    return list(dm.Alert.objects.filter(kind=kind).order_by("id"))


def test_answers_are_read_as_the_dao_shapes() -> None:
    healthy, checks = health_mod.parse_health(
        json.dumps(healthcheck(("Negative resources", "queue root.a: vcore -2"))).encode()
    )
    assert healthy is False
    assert [(c.name, c.succeeded) for c in checks] == [
        ("Scheduling errors", True),
        ("Negative resources", False),
        ("Orphan allocations on node", True),
    ]
    assert checks[1].diagnosis == "queue root.a: vcore -2"
    start, build = health_mod.parse_clusters(json.dumps(CLUSTERS_ANSWER).encode())
    assert start == datetime.fromtimestamp(STARTED_NS / 1e9, UTC)
    assert build["buildVersion"] == "1.7.0"


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b'{"Healthy": "yes"}', "healthcheck: Healthy"),
        (b'{"HealthChecks": []}', "healthcheck"),
        (b'{"Healthy": true, "HealthChecks": [{"Succeeded": 1}]}', "HealthChecks[0].Succeeded"),
        (b'{"Healthy": true, "HealthChecks": {"a": 1}}', "healthcheck: HealthChecks"),
    ],
)
def test_a_malformed_healthcheck_is_refused_naming_its_field(body: bytes, where: str) -> None:
    with pytest.raises(ImportFailure) as err:
        health_mod.parse_health(body)
    assert (err.value.location or "").endswith(where)


def test_unhealthy_alerts_once_and_healthy_again_clears_it(
    yunikorn: FakeYuniKorn, staff: Any
) -> None:
    yunikorn.set_json(HEALTH, healthcheck())
    yunikorn.set_json(CLUSTERS, CLUSTERS_ANSWER)
    source = make_source(yunikorn)
    assert poll(source, T0).status == "stored"
    source.refresh_from_db()
    assert source.scheduler_health["healthy"] is True
    assert source.scheduler_health["build"]["buildVersion"] == "1.7.0"
    assert source.scheduler_unhealthy_since is None
    assert alerts(dm.Alert.Kind.SCHEDULER_UNHEALTHY) == []

    yunikorn.set_json(HEALTH, healthcheck(("Negative resources", "queue <root.a>: vcore -2")))
    for minute in (1, 2, 3):  # stays unhealthy for three polls: one alert
        assert poll(source, T0 + timedelta(minutes=minute)).status == "unchanged"
    (alert,) = alerts(dm.Alert.Kind.SCHEDULER_UNHEALTHY)
    assert alert.level == dm.Alert.Level.ERROR
    assert "Negative resources: queue <root.a>: vcore -2" in alert.message
    assert alert.count == 1
    source.refresh_from_db()
    assert source.scheduler_unhealthy_since == T0 + timedelta(minutes=1)

    pages = Client()
    pages.force_login(staff)
    html = pages.get(reverse("tree")).content.decode()
    cell = html.split('data-testid="source-scheduler">', 1)[1].split("</td>", 1)[0]
    assert "unhealthy since" in cell
    assert "Negative resources: queue &lt;root.a&gt;: vcore -2" in cell
    assert "YuniKorn 1.7.0" in cell

    yunikorn.set_json(HEALTH, healthcheck())
    poll(source, T0 + timedelta(minutes=4))
    alert.refresh_from_db()
    assert alert.acknowledged_at == T0 + timedelta(minutes=4)  # cleared by the dashboard
    (back,) = alerts(dm.Alert.Kind.SCHEDULER_HEALTHY)
    assert back.level == dm.Alert.Level.INFO
    assert "healthy again" in back.message
    source.refresh_from_db()
    assert source.scheduler_unhealthy_since is None


def test_a_failing_healthcheck_leaves_the_poll_and_says_health_unknown(
    yunikorn: FakeYuniKorn,
) -> None:
    """No healthcheck on this server (404): the snapshot is stored as ever."""
    source = make_source(yunikorn)
    assert poll(source, T0).status == "stored"
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.scheduler_health["healthy"] is None
    assert source.scheduler_health["error"].startswith(HEALTH)
    assert alerts(dm.Alert.Kind.SCHEDULER_UNHEALTHY) == []


def test_the_api_gives_the_schedulers_health(yunikorn: FakeYuniKorn, staff_client: Any) -> None:
    yunikorn.set_json(HEALTH, healthcheck(("Scheduling errors", "3 errors in 5 minutes")))
    yunikorn.set_json(CLUSTERS, CLUSTERS_ANSWER)
    source = make_source(yunikorn)
    poll(source, T0)
    data = staff_client.get(f"/api/sources/{source.pk}/").json()
    failing = [c for c in data["scheduler_health"]["checks"] if not c["succeeded"]]
    assert failing == [
        {
            "name": "Scheduling errors",
            "succeeded": False,
            "description": "Check for scheduling errors",
            "diagnosis": "3 errors in 5 minutes",
        }
    ]

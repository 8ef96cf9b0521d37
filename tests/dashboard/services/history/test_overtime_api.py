"""``/api/queue-over-time/`` and the queue-over-time page: the answer's figures, bad input
answered 400 naming the parameter, the page's charts with queue names escaped, the link
from the queue page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from dashboard import models

pytestmark = pytest.mark.django_db

Run = models.PreemptionRun
NOW = datetime.now(UTC).replace(microsecond=0)
START = NOW - timedelta(days=2)
ODD = "root.<img src=x onerror=alert(1)>"


def _snapshot(p: models.Partition, at: datetime, queues: dict[str, tuple[int, int]]) -> None:
    snap = models.ClusterSnapshot.objects.create(
        partition=p, source_kind="scenario", captured_at=at, imported_at=at, scenario={}
    )
    for path, (used, maximum) in queues.items():
        models.SnapshotQueue.objects.create(
            snapshot=snap,
            path=path,
            name=path.rsplit(".", 1)[-1],
            usage={"vcore": used},
            allocated={"vcore": used},
            guaranteed={"vcore": 4000},
            max={"vcore": maximum},
        )


@pytest.fixture
def partition() -> models.Partition:
    """root.a at 2 cores (max 8) for a day, then 10 (above the max) until now; one observed
    preemption on node n1 an hour ago."""
    cluster = models.Cluster.objects.create(name="c1")
    p = models.Partition.objects.create(cluster=cluster, name="default")
    _snapshot(p, START, {"root": (2000, 0), "root.a": (2000, 8000), ODD: (1000, 500)})
    _snapshot(p, START + timedelta(days=1), {"root": (10000, 0), "root.a": (10000, 8000)})
    run = Run.objects.create(
        partition=p,
        kind=Run.Kind.PREEMPT,
        trigger=Run.Trigger.OBSERVED,
        status="done",
        queued_at=NOW - timedelta(hours=1),
    )
    models.RunVictim.objects.create(
        run=run, position=0, allocation_key="k", queue="root.a", leaf="root.a", node="n1"
    )
    return p


def _get(client: APIClient, **params: str) -> Any:
    return client.get("/api/queue-over-time/", params)


def test_answer_holds_the_figures(viewer_client: APIClient, partition: models.Partition) -> None:
    """A day at 50 % of the guarantee, then all of it until the data's end (the observed
    preemption an hour before now: no data says what held after it); above the max
    from the second snapshot until then."""
    start = START.isoformat()
    response = _get(viewer_client, queue="root.a", start=start, end=NOW.isoformat())
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["cluster"], body["partition"], body["queue"]) == ("c1", "default", "root.a")
    usage = body["usage"]
    (vcore,) = usage["types"]
    assert vcore["type"] == "vcore"
    held = 86400 - 3600
    assert vcore["guaranteed_share"] == pytest.approx((0.5 * 86400 + held) / (86400 + held))
    assert vcore["above_max_seconds"] == pytest.approx(held)
    assert usage["covered_seconds"] == pytest.approx(86400 + held)
    assert usage["until"].replace("Z", "+00:00") == (NOW - timedelta(hours=1)).isoformat()
    assert (body["data_end"].replace("Z", "+00:00"), body["data_end_by"]) == (
        (NOW - timedelta(hours=1)).isoformat(),
        "run",
    )
    assert [p["used"] for p in usage["series"]] == [{"vcore": 2000}, {"vcore": 10000}]
    days = body["preemptions_per_day"]
    assert sum(d["observed"]["victims"] for d in days) == 1
    assert sum(d["predicted"]["victims"] for d in days) == 0
    assert body["preemptions_per_node"]["nodes"] == [{"node": "n1", "predicted": 0, "observed": 1}]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"queue": "root.nope"}, "queue"),
        ({}, "queue"),
        ({"queue": "a"}, "queue"),
        ({"queue": "root.a", "partition": "nope"}, "partition"),
        ({"queue": "root.a", "cluster": "nope"}, "cluster"),
        ({"queue": "root.a", "start": "tomorrow"}, "start"),
        ({"queue": "root.a", "start": "2026-11-02", "end": "2026-11-01"}, "end"),
        ({"queue": "root.a", "start": "2024-01-01", "end": "2026-01-01"}, "start"),
        ({"queue": "root.a", "end": "9999-01-01"}, "end"),
        ({"queue": "root.a", "end": "9999-12-31T23:59:59-01:00"}, "end"),
        ({"queue": "root.a", "end": "0001-01-01T00:00:00+01:00"}, "end"),
        ({"queue": "root.a", "start": "2026-13-01"}, "start"),
    ],
)
def test_bad_parameters_answer_400_naming_them(
    viewer_client: APIClient, partition: models.Partition, params: dict[str, str], field: str
) -> None:
    response = _get(viewer_client, **params)
    assert (response.status_code, list(response.json())) == (400, [field])


def test_anonymous_is_refused(anon_client: APIClient, partition: models.Partition) -> None:
    assert _get(anon_client, queue="root.a").status_code in (401, 403)


def test_schema_documents_the_operation(staff_client: APIClient) -> None:
    schema = staff_client.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/queue-over-time/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"queue", "start", "end", "partition"}
    assert "400" in operation["responses"]


def _figure(html: str, name: str) -> dict[str, Any]:
    match = re.search(rf'<script id="{name}" type="application/json">(.*?)</script>', html, re.S)
    assert match is not None, name
    figure: dict[str, Any] = json.loads(match.group(1))
    return figure


def test_page_draws_the_window_and_escapes_queue_names(
    staff: Any, partition: models.Partition
) -> None:
    client = Client()
    client.force_login(staff)
    url = reverse("queue_over_time")
    response = client.get(url, {"queue": ODD, "start": START.strftime("%Y-%m-%dT%H:%M")})
    html = response.content.decode()
    assert response.status_code == 200
    assert f'name="start" value="{START:%Y-%m-%dT%H:%M}"' in html
    assert "<img src=x" not in html
    usage = _figure(html, "overtime-usage-figure")
    hover = usage["data"][0]["hovertext"][0]
    assert hover.startswith("root.&lt;img src=x onerror=alert(1)&gt; · used")
    assert [t["line"]["shape"] for t in usage["data"]] == ["hv"] * 4

    a = client.get(url, {"queue": "root.a"}).content.decode()
    nodes = _figure(a, "overtime-node-figure")
    assert [t["x"] for t in nodes["data"]] == [[0], [1]]  # predicted, observed on n1
    assert 'data-testid="overtime-types"' in a


def test_page_names_the_bad_parameter(staff: Any, partition: models.Partition) -> None:
    client = Client()
    client.force_login(staff)
    response = client.get(
        reverse("queue_over_time"), {"queue": "root.a", "start": "2026-11-02", "end": "2026-11-01"}
    )
    assert response.status_code == 400
    assert "<strong>end</strong>: must be after start" in response.content.decode()


def test_queue_page_links_to_it(staff: Any, partition: models.Partition) -> None:
    client = Client()
    client.force_login(staff)
    html = client.get(reverse("queue"), {"queue": "root.a"}).content.decode()
    link = re.search(r'href="([^"]*)" data-testid="overtime-link"', html)
    assert link is not None
    assert link.group(1).startswith(reverse("queue_over_time") + "?")
    assert "queue=root.a" in link.group(1)

"""Issue 38, point 1 for pending asks: an ask not yet allocated keeps its pod (namespace/
name, from the ask's tags, as an allocation does) and every view of it names the pod
first: the application's pending asks, the what-if's ask list and its explanation, the
API's asks and history.csv. On the sample cluster, whose pending ask carries its pod."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import factories
import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from rest_answers import rest_files
from rest_framework.test import APIClient

from dashboard import models, services

pytestmark = pytest.mark.django_db

KEY = "0561dd16-bf2d-5231-b2cf-650f76e87d42"
POD = "ml-training/bert-finetune-ft12-worker-0"
APP = "bert-finetune-ft12"
#: A pod named first, its key shortened after it (the whole key in the title).
NAMED = (
    f'<span class="alloc-pod">{POD}</span> <span class="mono muted alloc-key" '
    f'title="{KEY}">0561dd16…</span>'
)


@pytest.fixture
def snapshot() -> models.ClusterSnapshot:
    return services.import_snapshot(rest_files(Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"))


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_pending_ask_keeps_its_pod(snapshot: models.ClusterSnapshot) -> None:
    assert list(snapshot.asks.values_list("key", "pod")) == [(KEY, POD)]


def test_the_api_names_the_asks_pod(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    client = APIClient()
    client.force_authenticate(staff)
    body = client.get(f"/api/snapshots/{snapshot.pk}/asks/").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert [(r["key"], r["pod"], r["namespace"]) for r in rows] == [
        (KEY, "bert-finetune-ft12-worker-0", "ml-training")
    ]


def test_the_application_page_names_its_pending_ask_by_pod(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    html = _client(staff).get(reverse("application"), {"app": APP}).content.decode()
    asks = html[html.index('data-testid="app-asks"') :]
    assert NAMED in asks[: asks.index("</table>")]


def test_a_whatif_for_the_ask_names_its_pod_in_list_explanation_and_csv(
    staff: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    client = _client(staff)
    page = client.get(reverse("whatif")).content.decode()
    option = re.search(rf'<option value="{KEY}"[^>]*>([^<]*)</option>', page)
    assert option is not None
    assert f"pod {POD}" in option.group(1)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("whatif"), {"kind": "preempt", "ask_key": KEY, "allow_preempt_other": "on"}
        )
    assert response.status_code == 302
    html = client.get(response["Location"]).content.decode()
    explain = html[html.index('data-testid="ask-explain"') :]
    assert NAMED in explain[: explain.index("</p>")]
    run = models.PreemptionRun.objects.get(kind=models.PreemptionRun.Kind.WHATIF_PREEMPT)
    body = b"".join(client.get(reverse("history_csv")).streaming_content).decode()  # type: ignore[attr-defined]
    (row,) = [r for r in csv.DictReader(io.StringIO(body)) if r["id"] == str(run.pk)]
    assert (row["asks"], row["ask_pods"]) == (KEY, POD)


def test_a_rounds_victims_name_the_ask_they_make_room_for_by_its_pod(staff: Any) -> None:
    """The run page's "for ask" column names each victim's ask by its pod, key second."""
    scenario = factories.small_scenario()
    scenario["nodes"].append({"id": "n2", "capacity": {"vcore": 2000}})
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    models.PendingAsk.objects.create(
        snapshot=snapshot,
        key=KEY,
        app="app-b",
        queue="root.b",
        resources={"vcore": 3000},
        created=factories.T0.timestamp() - 3600,
        pod=POD,
    )
    run = services.create_run(
        snapshot=snapshot,
        kind=models.PreemptionRun.Kind.ROUND,
        request={"ask_keys": [KEY]},
        enqueue=False,
    )
    services.execute_run(run.pk)
    assert run.victims.exists()
    html = _client(staff).get(reverse("run", args=[run.pk])).content.decode()
    cells = re.findall(r'data-testid="victim-ask">(.*?)</td>', html, re.S)
    assert cells
    assert {NAMED} == set(cells)

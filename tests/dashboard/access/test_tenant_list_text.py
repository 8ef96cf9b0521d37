"""The free text of the rows a tenant lists (a run's alerts and error, an alert's
message, a change's reason) holds no name of a queue it cannot view nor of a victim
in one: replaced by ``(hidden)``, as the run's detail shows it."""

from __future__ import annotations

import json
from typing import Any

import factories
import pytest
from django.test import Client
from support.tenants import Tenants, make_tenants, page_text

from dashboard import models

pytestmark = pytest.mark.django_db

#: what bob (root.b) may not read: alice's queues and her victim's names
ALICE_NAMES = ("root.a", "app-0", "k1")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _leaks(value: Any) -> list[str]:
    text = json.dumps(value)
    return [n for n in ALICE_NAMES if n in text]


def _bobs_run_naming_alice(tenants: Tenants) -> models.PreemptionRun:
    run = factories.make_run(
        tenants.snapshot,
        queue="root.b",
        alerts=["took k1 of app-0 in root.a.x", "root.b over its guarantee"],
        error="root.a.y refused the ask",
    )
    models.RunVictim.objects.create(
        run=run, position=0, allocation_key="k1", app="app-0", queue="root.a.x"
    )
    return run


@pytest.mark.parametrize("url", ["/api/runs/", "/api/rounds/"])
def test_a_tenants_run_list_hides_other_queues_in_alerts_and_error(
    tenants: Tenants, staff: Any, url: str
) -> None:
    run = _bobs_run_naming_alice(tenants)
    if url == "/api/rounds/":
        run.kind = models.PreemptionRun.Kind.ROUND
        run.save(update_fields=["kind"])
    rows = tenants.client(tenants.bob).get(url).json()["results"]
    assert [r["id"] for r in rows] == [run.pk]
    assert rows[0]["alerts"] == [
        "took (hidden) of (hidden) in (hidden)",
        "root.b over its guarantee",
    ]
    assert rows[0]["error"] == "(hidden) refused the ask"
    assert _leaks(rows) == []
    # the same as the detail; staff read the names
    detail = tenants.client(tenants.bob).get(f"/api/runs/{run.pk}/").json()
    assert (detail["alerts"], detail["error"]) == (rows[0]["alerts"], rows[0]["error"])
    whole = tenants.client(staff).get(url).json()["results"][0]
    assert whole["alerts"][0] == "took k1 of app-0 in root.a.x"


def _bobs_rows_naming_alice(snap: models.ClusterSnapshot) -> None:
    """An alert and a change of root.b whose text names alice's queues."""
    models.Alert.objects.create(
        kind=models.Alert.Kind.QUOTA,
        message="root.b squeezed root.a.y",
        queue="root.b",
        partition=snap.partition,
        created_at=factories.T0,
    )
    models.QuotaChange.objects.create(
        partition=snap.partition,
        queue_path="root.b",
        new_max={"vcore": 1000},
        changed_at=factories.T0,
        state=models.QuotaChange.State.WAITING,
        reason="lowered for root.a.x",
    )


def test_a_tenants_alerts_and_changes_hide_other_queues_in_their_text(
    tenants: Tenants, staff: Any
) -> None:
    snap = tenants.snapshot
    run = _bobs_run_naming_alice(tenants)
    models.Alert.objects.create(
        kind=models.Alert.Kind.QUOTA,
        message="root.b's run took k1 of app-0",
        queue="root.b",
        partition=snap.partition,
        run=run,
        created_at=factories.T0,
    )
    _bobs_rows_naming_alice(snap)
    bob = tenants.client(tenants.bob)
    alerts = bob.get("/api/alerts/").json()["results"]
    assert sorted(a["message"] for a in alerts) == [
        "root.b squeezed (hidden)",
        "root.b's run took (hidden) of (hidden)",
    ]
    changes = bob.get("/api/quota-changes/").json()["results"]
    assert [c["reason"] for c in changes] == ["lowered for (hidden)"]
    assert _leaks([alerts, changes]) == []
    staff_alerts = tenants.client(staff).get("/api/alerts/").json()["results"]
    assert "root.b squeezed root.a.y" in [a["message"] for a in staff_alerts]


def test_the_alert_and_change_pages_hide_other_queues_in_their_text(tenants: Tenants) -> None:
    snap = tenants.snapshot
    _bobs_rows_naming_alice(snap)
    client = Client()
    client.force_login(tenants.bob)
    alerts = page_text(client.get("/alerts/"))
    assert "root.b squeezed (hidden)" in alerts
    changes = page_text(client.get("/changes/"))
    assert "lowered for (hidden)" in changes
    assert _leaks([alerts, changes]) == []
    # the rows themselves are unchanged
    assert models.QuotaChange.objects.get().reason == "lowered for root.a.x"

"""A run of a tenant's queue whose victims lie in queues it cannot view: shown, with
those victims as their count and resources only (no key, application, pod, queue or
user), in the run's detail, a what-if's answer, the lists and the CSVs."""

from __future__ import annotations

import json
from typing import Any

import factories
import pytest
from support.tenants import Tenants, make_tenants

from dashboard import models

pytestmark = pytest.mark.django_db

#: names of alice's allocations in the small scenario (k0..k7 of app-0 and app-1)
ALICE_NAMES = ("root.a", "app-0", "app-1", "k1", "k2")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _text(response: Any) -> str:
    return json.dumps(response.json())


def _leaks(text: str) -> list[str]:
    return [n for n in ALICE_NAMES if n in text]


def test_bobs_what_if_shows_alices_victims_without_names(tenants: Tenants, staff: Any) -> None:
    """bob's pending ask in root.b would take alice's allocations of root.a."""
    bob = tenants.client(tenants.bob)
    body = {"snapshot": tenants.snapshot.pk, "ask_key": "ask-1", "wait": True}
    made = bob.post("/api/whatif/preempt/", body, format="json")
    assert made.status_code == 201, made.content
    answer = made.json()
    assert answer["outcome"] == "preempted"
    victims = answer["victims"]
    assert victims, answer
    assert all(
        v == {"position": v["position"], "hidden": True, "resources": v["resources"]}
        for v in victims
    )
    assert answer["victim_count"] == len(victims)
    assert _leaks(_text(made)) == []
    # the same run read again, in the list and as CSV
    run = answer["id"]
    detail = bob.get(f"/api/runs/{run}/")
    assert detail.status_code == 200
    assert detail.json()["victims"] == victims
    assert _leaks(_text(detail)) == []
    assert [r["id"] for r in bob.get("/api/runs/").json()["results"]] == [run]
    csv = bob.get("/api/runs/export/").content.decode()
    assert str(run) in csv
    assert _leaks(csv) == []
    # staff read every name
    staff_view = tenants.client(staff).get(f"/api/runs/{run}/").json()
    assert [v["queue"] for v in staff_view["victims"]] == ["root.a.x"]
    # the same count and resources: the victims' share of what the run took
    assert [(v["position"], v["resources"]) for v in staff_view["victims"]] == [
        (v["position"], v["resources"]) for v in victims
    ]


def test_a_tenant_reads_the_names_of_its_own_victims(tenants: Tenants) -> None:
    snap = tenants.snapshot
    run = factories.make_run(snap, queue="root.a.x")
    for position, (key, queue) in enumerate((("k1", "root.a.x"), ("kb", "root.b"))):
        models.RunVictim.objects.create(
            run=run,
            position=position,
            allocation_key=key,
            app=f"app-of-{key}",
            queue=queue,
            resources={"vcore": 1000},
        )
    victims = tenants.client(tenants.alice).get(f"/api/runs/{run.pk}/").json()["victims"]
    assert victims[0]["allocation_key"] == "k1"
    assert victims[0]["queue"] == "root.a.x"
    assert victims[1] == {"position": 1, "hidden": True, "resources": {"vcore": 1000}}

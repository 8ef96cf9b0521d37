"""Plans for a tenant: a proposed config whose changes touch only queues the user
administers is planned (and its changes scheduled); one touching any other queue is
refused as a whole, naming only the queues the user may view; keeping a planned config
version (the whole partition's config) stays with staff."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.tenants import CONFIG, Tenants, make_tenants

from dashboard import models

pytestmark = pytest.mark.django_db

#: alice lowers root.a.y's max: a queue she administers (root.a's adminacl)
ALICE_PLAN = CONFIG.replace(
    "              - name: y\n",
    "              - name: y\n                resources:\n                  max: {vcore: 4}\n",
)
#: and root.b's guarantee too: bob's queue
BOTH_PLAN = ALICE_PLAN.replace("guaranteed: {vcore: 5}", "guaranteed: {vcore: 4}")


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _text(response: Any) -> str:
    return json.dumps(response.json())


def test_a_plan_of_administered_queues_only_is_planned_and_scheduled(tenants: Tenants) -> None:
    assert ALICE_PLAN != CONFIG
    alice = tenants.client(tenants.alice)
    planned = alice.post("/api/plans/", {"text": ALICE_PLAN}, format="json")
    assert planned.status_code == 200, planned.content
    assert [c["queue"] for c in planned.json()["changes"]] == ["root.a.y"]
    assert "root.b" not in _text(planned)
    handback = alice.post("/api/plans/handback/", {"text": ALICE_PLAN}, format="json")
    assert handback.status_code == 200, handback.content
    scheduled = alice.post("/api/plans/schedule/", {"text": ALICE_PLAN}, format="json")
    assert scheduled.status_code == 201, scheduled.content
    assert [c.queue_path for c in models.QuotaChange.objects.all()] == ["root.a.y"]


@pytest.mark.parametrize("action", ["", "handback/", "schedule/", "keep/"])
def test_a_plan_touching_another_tenants_queue_is_refused(tenants: Tenants, action: str) -> None:
    alice = tenants.client(tenants.alice)
    versions = models.ConfigVersion.objects.count()
    refused = alice.post(f"/api/plans/{action}", {"text": BOTH_PLAN}, format="json")
    assert refused.status_code == 403, refused.content
    assert "root.b" not in _text(refused)
    assert models.QuotaChange.objects.count() == 0
    assert models.ConfigVersion.objects.count() == versions


def test_the_refusal_names_the_queues_the_user_may_view(tenants: Tenants) -> None:
    """carol views root.a.x (submitacl) but administers nothing: refused before the
    body is read, by the permission; a plan in the services names root.a.y for her."""
    carol = tenants.client(tenants.carol)
    assert carol.post("/api/plans/", {"text": ALICE_PLAN}, format="json").status_code == 403
    alice = tenants.client(tenants.alice)
    refused = alice.post("/api/plans/", {"text": BOTH_PLAN}, format="json").json()
    assert "1 queue you cannot view" in refused["detail"]


def test_keeping_a_planned_config_stays_with_staff(tenants: Tenants) -> None:
    alice = tenants.client(tenants.alice)
    answer = alice.post("/api/plans/keep/", {"text": ALICE_PLAN}, format="json")
    assert answer.status_code == 403

"""The API under the queue ACLs: each tenant reads and changes its own queues only, a
refusal is a 403 naming nothing of the other tenant, and a new config version changes
the permissions at once."""

from __future__ import annotations

import json
from typing import Any

import factories
import pytest
from support.tenants import CONFIG_BOB_ADMINISTERS_A, Tenants, make_tenants

from dashboard import models, services
from dashboard.access.scoping import QueueAccessDenied

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _text(response: Any) -> str:
    return json.dumps(response.json()) if response.content else ""


def test_lists_hold_only_the_users_queues(tenants: Tenants) -> None:
    snap = tenants.snapshot
    run_a = factories.make_run(snap, queue="root.a.x")
    run_b = factories.make_run(snap, queue="root.b")
    mixed = factories.make_run(snap, queue="root.a.y")
    models.RunVictim.objects.create(
        run=mixed, position=0, allocation_key="kb", app="app-b", queue="root.b"
    )
    models.Alert.objects.create(
        kind=models.Alert.Kind.QUOTA,
        message="a",
        queue="root.a",
        partition=snap.partition,
        created_at=factories.T0,
    )
    models.Alert.objects.create(
        kind=models.Alert.Kind.QUOTA,
        message="secret-b",
        queue="root.b",
        partition=snap.partition,
        created_at=factories.T0,
    )
    alice = tenants.client(tenants.alice)
    runs = alice.get("/api/runs/").json()["results"]
    # the run of root.a.y is alice's; its victim in root.b is shown without names
    assert [r["id"] for r in runs] == [mixed.pk, run_a.pk]
    victims = alice.get(f"/api/runs/{mixed.pk}/").json()["victims"]
    assert victims == [{"position": 0, "hidden": True, "resources": {}}]
    assert "root.b" not in _text(alice.get("/api/alerts/"))
    assert len(alice.get("/api/alerts/").json()["results"]) == 1
    bob = tenants.client(tenants.bob)
    assert [r["id"] for r in bob.get("/api/runs/").json()["results"]] == [run_b.pk]
    # carol views root.a.x only
    carol = tenants.client(tenants.carol)
    assert [r["id"] for r in carol.get("/api/runs/").json()["results"]] == [run_a.pk]
    csv = alice.get("/api/runs/export/").content.decode()
    assert "root.b" not in csv
    assert "kb" not in csv
    assert "root.a.x" in csv


def test_a_row_of_another_tenant_is_a_403_naming_nothing(tenants: Tenants) -> None:
    run_b = factories.make_run(tenants.snapshot, queue="root.b")
    answer = tenants.client(tenants.alice).get(f"/api/runs/{run_b.pk}/")
    assert answer.status_code == 403
    assert "root.b" not in _text(answer)
    assert "bob" not in _text(answer)
    assert tenants.client(tenants.bob).get(f"/api/runs/{run_b.pk}/").status_code == 200


def test_views_spanning_every_tenant_are_refused(tenants: Tenants, viewer: Any) -> None:
    alice = tenants.client(tenants.alice)
    for path in ("/api/snapshots/", f"/api/snapshots/{tenants.snapshot.pk}/", "/api/configs/"):
        answer = alice.get(path)
        assert answer.status_code == 403, path
        assert "root.b" not in _text(answer)
    assert tenants.client(viewer).get("/api/snapshots/").status_code == 200


def test_writes_only_on_administered_queues(tenants: Tenants) -> None:
    alice = tenants.client(tenants.alice)
    body = {"partition": "default", "queue_path": "root.a.x", "new_max": {"vcore": 1000}}
    lower = {**body, "queue_path": "root.a", "new_max": {"vcore": 3000}}
    made = alice.post("/api/quota-changes/", lower, format="json")
    assert made.status_code == 201, made.content
    refused = alice.post("/api/quota-changes/", {**body, "queue_path": "root.b"}, format="json")
    assert refused.status_code == 403
    assert "root.b" not in _text(refused)
    assert "1 queue you cannot view" in _text(refused)
    # carol administers nothing: refused before her body is read
    carol = tenants.client(tenants.carol)
    answer = carol.post("/api/quota-changes/", body, format="json")
    assert answer.status_code == 403
    assert "root.a" not in _text(answer)
    # she views root.a.x, so the services' refusal names it
    with pytest.raises(QueueAccessDenied, match=r"You do not administer root.a.x \(config v1 in"):
        services.schedule_quota_change(
            tenants.snapshot.partition, "root.a.x", new_max=None, user=tenants.carol
        )
    # bob may neither edit nor cancel alice's change
    bob = tenants.client(tenants.bob)
    change = made.json()["id"]
    assert bob.post(f"/api/quota-changes/{change}/cancel/").status_code == 403
    # alice passes the permission (the change, done at once, is no longer cancellable)
    cancelled = alice.post(f"/api/quota-changes/{change}/cancel/")
    assert cancelled.status_code == 400, cancelled.content
    assert "state" in cancelled.json()


def test_what_ifs_only_on_administered_queues(tenants: Tenants) -> None:
    snap = tenants.snapshot.pk
    alice = tenants.client(tenants.alice)
    mine = alice.post(
        "/api/whatif/quota/",
        {"snapshot": snap, "queue": "root.a", "new_max": {"vcore": 1000}, "wait": True},
        format="json",
    )
    assert mine.status_code == 201, mine.content
    other = alice.post(
        "/api/whatif/quota/",
        {"snapshot": snap, "queue": "root.b", "new_max": {"vcore": 1000}, "wait": True},
        format="json",
    )
    assert other.status_code == 403
    assert "root.b" not in _text(other)
    # an unknown queue is refused the same way: a refusal tells nothing of what exists
    unknown = alice.post(
        "/api/whatif/quota/",
        {"snapshot": snap, "queue": "root.zzz", "new_max": None, "wait": True},
        format="json",
    )
    assert unknown.status_code == 403
    # the pending ask of root.b is bob's
    ask = {"snapshot": snap, "ask_key": "ask-1", "wait": True}
    assert alice.post("/api/whatif/preempt/", ask, format="json").status_code == 403


def test_a_new_config_version_changes_the_permissions(tenants: Tenants) -> None:
    run_a = factories.make_run(tenants.snapshot, queue="root.a.x")
    bob = tenants.client(tenants.bob)
    assert bob.get(f"/api/runs/{run_a.pk}/").status_code == 403
    assert bob.get("/api/runs/").json()["results"] == []
    services.import_config(CONFIG_BOB_ADMINISTERS_A.encode(), filename="queues.yaml")
    assert bob.get(f"/api/runs/{run_a.pk}/").status_code == 200
    assert [r["id"] for r in bob.get("/api/runs/").json()["results"]] == [run_a.pk]
    body = {"partition": "default", "queue_path": "root.a.y", "new_max": {"vcore": 3000}}
    assert bob.post("/api/quota-changes/", body, format="json").status_code == 201


def test_staff_and_readers_of_every_queue_keep_their_rights(
    tenants: Tenants, staff: Any, viewer: Any
) -> None:
    factories.make_run(tenants.snapshot, queue="root.b")
    factories.make_run(tenants.snapshot, queue="root.a")
    assert len(tenants.client(staff).get("/api/runs/").json()["results"]) == 2
    assert len(tenants.client(viewer).get("/api/runs/").json()["results"]) == 2
    body = {"partition": "default", "queue_path": "root.b", "new_max": {"vcore": 3000}}
    assert (
        tenants.client(viewer).post("/api/quota-changes/", body, format="json").status_code == 403
    )
    assert tenants.client(staff).post("/api/quota-changes/", body, format="json").status_code == 201

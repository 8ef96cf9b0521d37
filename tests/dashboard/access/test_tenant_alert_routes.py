"""A tenant routes the alerts of its own queues: its routes name a queue it may view,
only it (and staff) reads and changes them, and their deliveries carry only alerts of
queues the queue ACLs in force let it view when the alert is raised."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.tenants import CONFIG, Tenants, make_tenants

from dashboard import models, services
from dashboard.models.alerting import AlertDelivery, AlertRoute

pytestmark = pytest.mark.django_db

ROUTE = {"name": "alice-mail", "channel": "email", "email_to": "alice@example.org"}


@pytest.fixture
def tenants(db: None) -> Tenants:
    return make_tenants()


def _text(response: Any) -> str:
    return json.dumps(response.json()) if response.content else ""


def _raise(tenants: Tenants, queue: str) -> models.Alert:
    return services.raise_alert(
        models.Alert.Kind.QUOTA,
        f"an alert of {queue}",
        level=models.Alert.Level.ERROR,
        partition=tenants.snapshot.partition,
        queue=queue,
    )


def _delivered(route: AlertRoute) -> list[str]:
    rows = AlertDelivery.objects.filter(route=route).select_related("alert")
    return sorted(d.alert.queue for d in rows if d.alert is not None)


def test_a_tenant_routes_alerts_of_its_queues_only(tenants: Tenants, staff: Any) -> None:
    alice = tenants.client(tenants.alice)
    made = alice.post("/api/alert-routes/", {**ROUTE, "queue": "root.a"}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["owner"] == "alice"
    everything = alice.post(
        "/api/alert-routes/", {**ROUTE, "name": "alice-all", "queue": ""}, format="json"
    )
    assert everything.status_code == 201, everything.content
    staff_route = tenants.client(staff).post(
        "/api/alert-routes/", {**ROUTE, "name": "ops", "email_to": "ops@example.org"}, format="json"
    )
    assert staff_route.status_code == 201
    for queue in ("root.a.x", "root.b", ""):
        _raise(tenants, queue)
    assert _delivered(AlertRoute.objects.get(name="alice-mail")) == ["root.a.x"]
    assert _delivered(AlertRoute.objects.get(name="alice-all")) == ["root.a.x"]
    assert _delivered(AlertRoute.objects.get(name="ops")) == ["", "root.a.x", "root.b"]
    # her deliveries: only those of her routes
    deliveries = alice.get("/api/alert-deliveries/").json()["results"]
    assert {d["route_name"] for d in deliveries} == {"alice-mail", "alice-all"}
    assert "root.b" not in _text(alice.get("/api/alert-deliveries/"))


def test_a_route_of_another_tenants_or_an_unknown_queue_is_refused_alike(
    tenants: Tenants,
) -> None:
    alice = tenants.client(tenants.alice)
    other = alice.post("/api/alert-routes/", {**ROUTE, "queue": "root.b"}, format="json")
    unknown = alice.post("/api/alert-routes/", {**ROUTE, "queue": "root.nowhere"}, format="json")
    assert (other.status_code, unknown.status_code) == (403, 403)
    assert other.json() == unknown.json()
    assert not AlertRoute.objects.exists()


def test_only_the_owner_reads_and_changes_its_route(tenants: Tenants, staff: Any) -> None:
    alice = tenants.client(tenants.alice)
    route = alice.post("/api/alert-routes/", {**ROUTE, "queue": "root.a"}, format="json").json()
    bob = tenants.client(tenants.bob)
    assert bob.get("/api/alert-routes/").json()["results"] == []
    url = f"/api/alert-routes/{route['id']}/"
    for answer in (
        bob.get(url),
        bob.patch(url, {"enabled": False}, format="json"),
        bob.delete(url),
    ):
        assert answer.status_code == 403, answer.content
        assert "root.a" not in _text(answer)
    assert bob.post(f"{url}test/").status_code == 403
    assert AlertRoute.objects.get(pk=route["id"]).enabled
    assert alice.patch(url, {"enabled": False}, format="json").status_code == 200
    assert tenants.client(staff).get(url).status_code == 200
    # nor may bob move his own route onto alice's queue
    bobs = bob.post(
        "/api/alert-routes/", {**ROUTE, "name": "bob", "queue": "root.b"}, format="json"
    ).json()
    moved = bob.patch(f"/api/alert-routes/{bobs['id']}/", {"queue": "root.a"}, format="json")
    assert moved.status_code == 403


def test_a_new_config_version_stops_deliveries_of_queues_no_longer_viewed(
    tenants: Tenants,
) -> None:
    alice = tenants.client(tenants.alice)
    alice.post("/api/alert-routes/", {**ROUTE, "queue": ""}, format="json")
    services.import_config(
        CONFIG.replace('adminacl: " team-a"', 'adminacl: "bob"').encode(), filename="queues.yaml"
    )
    _raise(tenants, "root.a.x")
    assert _delivered(AlertRoute.objects.get()) == []

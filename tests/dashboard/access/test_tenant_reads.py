"""What a tenant reads beyond the runs, changes and alerts of its queues: the work lost,
the list pages and their CSVs, each narrowed to the queues it may view."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import factories
import pytest
from django.test import Client
from support.tenants import Tenants, make_tenants

from dashboard import models

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenants(db: None) -> Tenants:
    made = make_tenants()
    for app, queue in (("app-alice", "root.a.x"), ("app-bob", "root.b")):
        models.CompletedApplication.objects.create(
            partition=made.snapshot.partition,
            app_id=app,
            queue=queue,
            finished_at=datetime(2026, 9, 3, tzinfo=UTC),
            preempted={"UNKNOWN": {"vcore": 7_200_000}},
            read_at=factories.T0,
        )
    return made


def _page(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode()
    return str(response.content.decode())


def test_the_work_lost_api_holds_only_the_users_queues(tenants: Tenants) -> None:
    alice = tenants.client(tenants.alice)
    answer = alice.get("/api/work-lost/")
    assert answer.status_code == 200, answer.content
    assert [r["queue"] for r in answer.json()["rows"]] == ["root.a.x"]
    assert [
        r["queue"] for r in tenants.client(tenants.bob).get("/api/work-lost/").json()["rows"]
    ] == ["root.b"]
    mine = alice.get("/api/work-lost/?queue=root.a")
    assert [r["queue"] for r in mine.json()["rows"]] == ["root.a.x"]
    refused = alice.get("/api/work-lost/?queue=root.b")
    assert refused.status_code == 403
    assert "root.b" not in refused.content.decode()


def test_the_work_lost_page_and_csv_hold_only_the_users_queues(tenants: Tenants) -> None:
    alice = _page(tenants.alice)
    for url in ("/work-lost/", "/work-lost.csv"):
        answer = alice.get(url)
        assert answer.status_code == 200, url
        text = _body(answer)
        assert "root.a.x" in text, url
        assert "root.b" not in text, url


def _rows_of_both(tenants: Tenants) -> None:
    snap = tenants.snapshot
    factories.make_run(snap, queue="root.a.x")
    factories.make_run(snap, queue="root.b")
    for queue in ("root.a", "root.b"):
        models.Alert.objects.create(
            kind=models.Alert.Kind.QUOTA,
            message=f"alert of {queue}",
            queue=queue,
            partition=snap.partition,
            created_at=factories.T0,
        )
        models.QuotaChange.objects.create(
            partition=snap.partition,
            queue_path=queue,
            new_max={"vcore": 1000},
            changed_at=factories.T0,
            state=models.QuotaChange.State.WAITING,
        )


@pytest.mark.parametrize("url", ["/history/", "/history.csv", "/changes/", "/alerts/"])
def test_the_list_pages_and_csvs_hold_only_the_users_queues(tenants: Tenants, url: str) -> None:
    _rows_of_both(tenants)
    for user, mine, other in (
        (tenants.alice, "root.a", "root.b"),
        (tenants.bob, "root.b", "root.a"),
    ):
        answer = _page(user).get(url)
        assert answer.status_code == 200, (user, url)
        text = _body(answer)
        assert mine in text, (user, url)
        assert other not in text, (user, url)


def test_a_tenant_schedules_edits_and_cancels_changes_of_its_queues_only(
    tenants: Tenants,
) -> None:
    _rows_of_both(tenants)
    alice = _page(tenants.alice)
    made = alice.post("/changes/new/", {"queue": "root.a.y", "max__vcore": "1"})
    assert made.status_code == 302, made.content
    assert models.QuotaChange.objects.filter(queue_path="root.a.y").exists()
    before = models.QuotaChange.objects.count()
    refused = alice.post("/changes/new/", {"queue": "root.b", "max__vcore": "1"})
    assert refused.status_code == 403
    assert "root.b" not in _body(refused)
    assert models.QuotaChange.objects.count() == before
    bobs = models.QuotaChange.objects.get(queue_path="root.b")
    for method, url in (
        ("get", f"/changes/{bobs.pk}/edit/"),
        ("post", f"/changes/{bobs.pk}/edit/"),
        ("post", f"/changes/{bobs.pk}/cancel/"),
    ):
        answer = getattr(alice, method)(url)
        assert answer.status_code == 403, (method, url)
        assert "root.b" not in _body(answer)
    bobs.refresh_from_db()
    assert bobs.state == models.QuotaChange.State.WAITING
    alices = models.QuotaChange.objects.get(queue_path="root.a")
    assert alice.post(f"/changes/{alices.pk}/cancel/").status_code == 302
    alices.refresh_from_db()
    assert alices.state == models.QuotaChange.State.CANCELLED


def test_the_unread_badge_counts_only_the_users_queues(tenants: Tenants) -> None:
    _rows_of_both(tenants)
    page = _page(tenants.alice).get("/access/")
    assert page.context["unread_alerts"] == 1


def test_the_rounds_list_answers_a_tenant_without_the_partitions_rounds(
    tenants: Tenants,
) -> None:
    """A round is the whole partition's (every pending ask): a tenant's list is empty."""
    factories.make_run(tenants.snapshot, kind=models.PreemptionRun.Kind.ROUND, queue="")
    answer = tenants.client(tenants.alice).get("/api/rounds/")
    assert answer.status_code == 200
    assert answer.json()["results"] == []

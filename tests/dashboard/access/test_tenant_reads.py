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

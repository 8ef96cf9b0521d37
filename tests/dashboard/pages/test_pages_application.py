"""The application page: allocations, asks, state history, gang data, victim status and why."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import factories
import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.importers import parse_snapshot

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _rest_files() -> dict[str, bytes]:
    rest = Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"
    return {
        p.name: p.read_bytes()
        for p in sorted(rest.glob("*.json"))
        if p.name != "fullstatedump.json"
    }


def _row(html: str, key: str) -> str:
    match = re.search(rf'<tr data-allocation="{re.escape(key)}">(.*?)</tr>', html, re.S)
    assert match is not None, key
    return match.group(1)


def test_allocations_say_whether_they_are_quota_candidates_and_why(viewer: Any) -> None:
    scenario = factories.small_scenario()
    scenario["allocations"][1]["allow_preemption"] = False  # k1 of app-1 opts out
    scenario["allocations"][3]["required_node"] = True  # k3 of app-1 is bound to its node
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    html = _client(viewer).get(reverse("application"), {"app": "app-1"}).content.decode()
    assert '<h1 class="mono" data-testid="app-title">app-1</h1>' in html
    assert "root.a.x" in html
    k3 = _row(html, "k3")
    assert '<span class="pill cancelled">no</span>' in k3
    assert "node" in k3  # bound to its node: the reason names it
    k5 = _row(html, "k5")
    assert re.search(r"yes · #\d+ in its leaf", k5)
    assert "younger" in k5 or "originator" in k5 or "priority" in k5  # the rules of its place
    assert services.snapshot_allocations(snapshot).filter(app="app-1").count() == 4
    assert "This snapshot has no state history" in html


def test_state_history_user_and_gang_data_from_yunikorn_rest(viewer: Any) -> None:
    files = _rest_files()
    apps = json.loads(files["partition_applications_active.json"])
    bert = next(a for a in apps if a["applicationID"] == "bert-finetune-ft12")
    bert["placeholderData"] = [
        {
            "taskGroupName": "workers",
            "count": 4,
            "minResource": {"vcore": 2000, "memory": 4 * 2**30},
            "replaced": 1,
            "timedout": 0,
        }
    ]
    bert["allocations"][0]["taskGroupName"] = "workers"
    bert["allocations"][0]["placeholder"] = True
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    parsed = parse_snapshot(files)
    services.import_snapshot(files, parsed=parsed)
    alloc_key = bert["allocations"][0]["allocationKey"]
    html = (
        _client(viewer).get(reverse("application"), {"app": "bert-finetune-ft12"}).content.decode()
    )
    assert 'data-testid="app-state-log"' in html
    assert "Accepted" in html
    assert "Running" in html
    assert bert["user"] in html
    placeholders = re.search(r'data-testid="app-placeholders">(.*?)</table>', html, re.S)
    assert placeholders is not None
    assert "workers" in placeholders.group(1)
    assert "memory 4 GiB, vcore 2 cores" in placeholders.group(1)
    row = _row(html, alloc_key)
    assert '<span class="pill">placeholder</span>' in row
    assert "workers" in row


def test_an_unknown_application_is_a_404_in_the_layout(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    response = _client(viewer).get(reverse("application"), {"app": "nope"})
    assert response.status_code == 404
    assert (
        f"Application &#x27;nope&#x27; is not in snapshot {snapshot.pk}."
        in response.content.decode()
    )


def test_queue_page_links_applications(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    html = _client(viewer).get(reverse("queue"), {"queue": "root.a"}).content.decode()
    assert (
        f"/applications/?cluster=default&amp;partition=default&amp;snapshot={snapshot.pk}&amp;app=app-1"
        in html
    )

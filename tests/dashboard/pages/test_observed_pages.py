"""The run and history pages keep what-ifs, predictions and observed preemptions apart,
show predicted and observed victims side by side, and count how often they agreed."""

from __future__ import annotations

import html as html_mod
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services

pytestmark = pytest.mark.django_db

Run = models.PreemptionRun


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes() for p in sorted(folder.glob("*.json")) if "statedump" not in p.name
    }


def _quota_victims(folder: Path) -> list[str]:
    nodes = json.loads((folder / "partition_nodes.json").read_bytes())
    return sorted(
        a["allocationKey"]
        for n in nodes
        for a in n["allocations"]
        if a.get("preempted") and a["applicationId"].startswith("spark-9c8b")
    )


@pytest.fixture
def history(fixtures_dir: Path) -> dict[str, Run]:
    """acme-ml: a predicted timer run of root.batch agreeing with the scheduler, a what-if."""
    files = _files(fixtures_dir / "rest")
    base = services.import_snapshot({k: v for k, v in files.items() if k != "events_batch.json"})
    keys = _quota_victims(fixtures_dir / "rest")
    timer = Run.objects.create(
        partition=base.partition,
        snapshot=base,
        kind=Run.Kind.QUOTA_ENFORCEMENT,
        trigger=Run.Trigger.TIMER,
        status="done",
        queue="root.batch",
        outcome="enforced",
        result={"status": "enforced"},
        # the same change (the max the scheduler enforced), predicted to fire just before
        # the scheduler's quota preemption (09:59:29.987)
        request={"queue": "root.batch", "new_max": {"vcore": 10000, "memory": 48 * 2**30}},
        queued_at=datetime(2026, 9, 1, 9, 59, 25, tzinfo=UTC),
    )
    for i, k in enumerate(keys):
        models.RunVictim.objects.create(run=timer, position=i, allocation_key=k, resources={})
    whatif = Run.objects.create(
        partition=base.partition,
        snapshot=base,
        kind=Run.Kind.WHATIF_QUOTA,
        trigger=Run.Trigger.MANUAL,
        status="done",
        queue="root.research",
        outcome="enforced",
        queued_at=datetime(2026, 9, 1, 8, 0, tzinfo=UTC),
    )
    services.import_snapshot(files, now=datetime.now(UTC) + timedelta(minutes=1))
    return {
        "timer": timer,
        "whatif": whatif,
        "quota": Run.objects.get(trigger="observed", kind="quota"),
        "preempt": Run.objects.get(trigger="observed", kind="preempt"),
    }


def test_observed_run_page_shows_predicted_and_observed_victims(
    viewer: Any, history: dict[str, Run], fixtures_dir: Path
) -> None:
    quota, timer = history["quota"], history["timer"]
    page = _client(viewer).get(reverse("run", args=[quota.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="run-nature"' in html
    assert ">observed</span>" in html
    assert "a preemption the scheduler itself carried out" in html.lower()
    assert "Victims the scheduler preempted" in html
    assert 'data-testid="run-compare"' in html
    assert "the same victims" in html
    assert f'href="{reverse("run", args=[timer.pk])}"' in html
    for key in _quota_victims(fixtures_dir / "rest"):
        assert key in html


def test_predicted_run_page_says_nothing_happened_and_links_what_did(
    viewer: Any, history: dict[str, Run]
) -> None:
    timer, quota = history["timer"], history["quota"]
    html = _client(viewer).get(reverse("run", args=[timer.pk])).content.decode()
    assert ">predicted</span>" in html
    assert "nothing happened in the cluster" in html_mod.unescape(html)
    assert "Predicted quota preemption" in html
    assert "Dashboard timer" in html
    assert 'data-testid="run-outcome">target claimed in full<' in html
    assert 'data-testid="run-observed-by"' in html
    assert f"observed run #{quota.pk}" in html


def test_history_separates_the_three_natures_and_counts_agreement(
    viewer: Any, history: dict[str, Run]
) -> None:
    client = _client(viewer)
    html = client.get(reverse("history")).content.decode()
    assert 'data-testid="history-agreement"' in html
    text = html_mod.unescape(html)
    assert (
        "2 observed preemptions by the scheduler; 1 had been predicted by the dashboard, "
        "1 of them with the same victims."
    ) in text
    assert ">what-if</span>" in html
    assert ">predicted</span>" in html
    assert ">observed</span>" in html
    only = client.get(reverse("history"), {"nature": "predicted"}).content.decode()
    assert f'href="{reverse("run", args=[history["timer"].pk])}"' in only
    assert f'href="{reverse("run", args=[history["quota"].pk])}"' not in only
    assert f'href="{reverse("run", args=[history["whatif"].pk])}"' not in only


def test_a_disagreeing_prediction_shows_which_victims_differ(
    viewer: Any, history: dict[str, Run]
) -> None:
    timer = history["timer"]
    timer.victims.filter(position=1).update(allocation_key="not-taken-by-the-scheduler")
    html = _client(viewer).get(reverse("run", args=[history["quota"].pk])).content.decode()
    assert "different victims" in html
    assert "not-taken-by-the-scheduler" in html
    text = html_mod.unescape(_client(viewer).get(reverse("history")).content.decode())
    assert "1 had been predicted by the dashboard, 0 of them with the same victims." in text

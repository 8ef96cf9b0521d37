"""Issue 38, point 12: the engine's guarantee rule ("the ask queue cannot stay within its
guarantee") is never quoted for a queue without a guarantee of its own: not in the
what-if's headline, nor in the run's alerts, the history CSV, or a round's alerts."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from engine.preempt import REASON_GUARANTEE

pytestmark = pytest.mark.django_db


def _snapshot() -> models.ClusterSnapshot:
    """The small scenario with a second node (2 cores) and root.c, a queue with no
    guarantee anywhere on its path: an ask of 3 cores fits no node, and no max holds it."""
    scenario = factories.small_scenario()
    scenario["nodes"].append({"id": "n2", "capacity": {"vcore": 2000}})
    scenario["queues"]["children"].append({"name": "c"})
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )


def _ask(client: Client, queue: str, cores: str, capture: Any) -> models.PreemptionRun:
    with capture(execute=True):
        response = client.post(
            reverse("whatif"),
            {
                "kind": "preempt",
                "ask_key": "",
                "queue": queue,
                "res__vcore": cores,
                "allow_preempt_other": "on",
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    return models.PreemptionRun.objects.order_by("-pk").first()  # type: ignore[return-value]


def _headline(client: Client, run: models.PreemptionRun) -> str:
    html = client.get(reverse("run", args=[run.pk])).content.decode()
    match = re.search(r'data-testid="run-reason">(.*?)</div>', html, re.S)
    assert match is not None
    assert 'data-testid="run-alerts"' not in html  # the reason is not said twice
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1)))


@pytest.mark.parametrize(
    ("queue", "cores", "words"),
    [
        (
            "root.c",
            "3",
            "queue root.c has no guarantee, nor has any queue above it: preemption makes "
            "room only for a queue within a guarantee",
        ),
        (
            "root.a.x",
            "3",
            "queue root.a.x has no guarantee of its own and cannot stay within the "
            "guarantee of root.a",
        ),
    ],
)
def test_a_queue_without_a_guarantee_is_not_told_it_cannot_stay_within_one(
    staff: Any, django_capture_on_commit_callbacks: Any, queue: str, cores: str, words: str
) -> None:
    """The what-if's headline, the run's alerts (API) and history.csv's alerts column say
    which guarantee holds the ask, or that there is none; the engine's answer keeps its
    contract's text."""
    _snapshot()
    client = Client()
    client.force_login(staff)
    run = _ask(client, queue, cores, django_capture_on_commit_callbacks)
    assert run.result is not None
    assert run.result["reason"] == REASON_GUARANTEE
    assert [words] == run.alerts
    assert f"Why not: {words}" == _headline(client, run)
    api = client.get(f"/api/runs/{run.pk}/").json()
    assert [words] == api["alerts"]
    body = b"".join(client.get(reverse("history_csv")).streaming_content).decode()  # type: ignore[attr-defined]
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [words] == [r["alerts"] for r in rows if r["id"] == str(run.pk)]


def test_a_queue_with_its_own_guarantee_keeps_the_engines_rule(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """root.b has a guarantee (5 cores): the rule is true of an ask of 6 and is quoted."""
    _snapshot()
    client = Client()
    client.force_login(staff)
    run = _ask(client, "root.b", "6", django_capture_on_commit_callbacks)
    assert run.alerts == [REASON_GUARANTEE]
    assert REASON_GUARANTEE in _headline(client, run)


def test_a_rounds_alerts_name_the_guarantee_of_each_asks_queue() -> None:
    """A round's alert "<ask>: <reason>" says the words true of that ask's queue."""
    snapshot = _snapshot()
    models.PendingAsk.objects.create(
        snapshot=snapshot,
        key="ask-c",
        app="app-c",
        queue="root.c",
        resources={"vcore": 3000},
        created=factories.T0.timestamp() - 3600,
    )
    run = services.create_run(
        snapshot=snapshot,
        kind=models.PreemptionRun.Kind.ROUND,
        request={"ask_keys": ["ask-c"]},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.alerts == [
        "ask-c: queue root.c has no guarantee, nor has any queue above it: preemption makes "
        "room only for a queue within a guarantee"
    ]

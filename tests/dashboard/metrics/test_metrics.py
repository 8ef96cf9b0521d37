"""/metrics: figures read from the database at scrape time, in Prometheus' text format,
for a bearer token or an allowed client address only."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factories
import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from scenarios import T0

from dashboard import models
from dashboard.metrics.polls import record_poll
from dashboard.sources import services as source_services
from dashboard.sources.client import FetchError
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

Run = models.PreemptionRun
TOKEN = "scrape-token-1"


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _scrape(settings: Any) -> Any:
    settings.METRICS_TOKEN = TOKEN
    return Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


def _value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def test_scrapes_need_a_token_or_an_allowed_network(settings: Any) -> None:
    client = Client()
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = []
    assert client.get("/metrics").status_code == 403  # neither set: closed
    settings.METRICS_TOKEN = TOKEN
    refused = client.get("/metrics")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401
    ok = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert ok.status_code == 200
    assert ok["Content-Type"].startswith("text/plain; version=")
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.1").status_code == 401
    forwarded = client.get("/metrics", REMOTE_ADDR="192.168.1.1", HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert forwarded.status_code == 401


def test_timers_usage_and_sources(settings: Any) -> None:
    """A waiting change's deadline and seconds to it; usage over max and guaranteed per
    resource type of the latest snapshot; a source's last success and poll totals."""
    snapshot = factories.SnapshotFactory.create()
    partition = snapshot.partition
    snapshot.queues.filter(path="root.a").update(max={"vcore": 4000, "memory": 0})
    snapshot.queues.filter(path="root.a.x").update(max={"vcore": 0})
    deadline = T0 + timedelta(seconds=600)
    models.QuotaChange.objects.create(
        partition=partition,
        queue_path="root.a",
        state=models.QuotaChange.State.WAITING,
        changed_at=T0,
        deadline=deadline,
    )
    source = ClusterSource.objects.create(
        name="prod", base_url="http://yunikorn.example.test:9080", cluster=partition.cluster
    )
    ClusterSource.objects.filter(pk=source.pk).update(
        status="healthy", last_success_at=T0, last_poll_at=T0
    )
    record_poll(source.pk, 0.5, failed=False)
    record_poll(source.pk, 1.5, failed=True)

    answer = _scrape(settings)
    samples = _samples(answer.content.decode())
    where = {"cluster": "default", "partition": "default", "queue": "root.a"}
    stamp = "yunikorn_dashboard_quota_timer_deadline_timestamp_seconds"
    assert _value(samples, stamp, **where) == deadline.timestamp()
    left = _value(samples, "yunikorn_dashboard_quota_timer_seconds_to_deadline", **where)
    assert 0 < left <= 600 or left < 0  # the wall clock runs; the sign says overdue
    usage_max = "yunikorn_dashboard_queue_usage_max_ratio"
    assert _value(samples, usage_max, resource="vcore", **where) == 2.0
    # none used of a type whose max is 0: no ratio; some used of it: +Inf
    assert (usage_max, (*sorted({**where, "resource": "memory"}.items()),)) not in samples
    x = {**where, "queue": "root.a.x"}
    assert _value(samples, usage_max, resource="vcore", **x) == float("inf")
    usage_g = "yunikorn_dashboard_queue_usage_guaranteed_ratio"
    assert _value(samples, usage_g, resource="vcore", **where) == 4.0
    b = {**where, "queue": "root.b"}
    assert _value(samples, usage_g, resource="vcore", **b) == 0.0
    src = {"source": "prod", "cluster": "default", "partition": "default"}
    assert (
        _value(samples, "yunikorn_dashboard_source_last_success_timestamp_seconds", **src)
        == T0.timestamp()
    )
    assert _value(samples, "yunikorn_dashboard_source_poll_duration_seconds_count", **src) == 2
    assert _value(samples, "yunikorn_dashboard_source_poll_duration_seconds_sum", **src) == 2.0
    assert _value(samples, "yunikorn_dashboard_source_poll_failures_total", **src) == 1
    assert _value(samples, "yunikorn_dashboard_source_last_poll_duration_seconds", **src) == 1.5
    assert _value(samples, "yunikorn_dashboard_source_healthy", **src) == 1.0


def test_a_failed_poll_is_counted(settings: Any) -> None:
    """poll_source counts each claimed poll, and a failed one as a failure."""
    partition = factories.PartitionFactory.create()
    source = ClusterSource.objects.create(
        name="down", base_url="http://yunikorn.example.test:9080", cluster=partition.cluster
    )

    def fetch(_: ClusterSource) -> Any:
        raise FetchError("/ws/v1/partitions", "connection refused")

    outcome = source_services.poll_source(source.pk, now=T0, force=True, fetch=fetch)
    assert outcome.status == "failed"
    stats = models.SourcePollStats.objects.get(source=source)
    assert (stats.polls, stats.failures) == (1, 1)
    assert stats.last_seconds is not None
    assert stats.last_seconds >= 0


def _run(snapshot: models.ClusterSnapshot, **fields: Any) -> models.PreemptionRun:
    return factories.make_run(snapshot, **fields)


def test_preemptions_agreement_and_latency(settings: Any) -> None:
    """Predicted and observed preemptions by kind; an observed one with the predicted
    victims agrees, one with other victims does not; run latency as a histogram."""
    snapshot = factories.SnapshotFactory.create()
    predicted = _run(
        snapshot,
        kind=Run.Kind.QUOTA_ENFORCEMENT,
        trigger=Run.Trigger.TIMER,
        queue="root.a",
        finished_at=T0 + timedelta(seconds=2),
    )
    for i, key in enumerate(["k6", "k7"]):
        predicted.victims.create(position=i, allocation_key=key)
    same = _run(
        snapshot,
        kind=Run.Kind.QUOTA,
        trigger=Run.Trigger.OBSERVED,
        queue="root.a",
        predicted=predicted,
        idempotency_key="o1",
    )
    other = _run(
        snapshot,
        kind=Run.Kind.QUOTA,
        trigger=Run.Trigger.OBSERVED,
        queue="root.a",
        predicted=predicted,
        idempotency_key="o2",
    )
    for i, key in enumerate(["k6", "k7"]):
        same.victims.create(position=i, allocation_key=key)
    other.victims.create(position=0, allocation_key="k5")
    _run(
        snapshot,
        kind=Run.Kind.PREEMPT,
        trigger=Run.Trigger.OBSERVED,
        queue="root.b",
        idempotency_key="o3",
    )
    _run(snapshot, finished_at=T0 + timedelta(seconds=0.3))  # a what-if
    _run(snapshot, status=Run.Status.PENDING)  # not finished: no latency

    samples = _samples(_scrape(settings).content.decode())
    base = {"cluster": "default", "partition": "default"}
    runs = "yunikorn_dashboard_preemptions_total"
    assert _value(samples, runs, queue="root.a", nature="predicted", kind="quota", **base) == 1
    assert _value(samples, runs, queue="root.a", nature="observed", kind="quota", **base) == 2
    assert _value(samples, runs, queue="root.b", nature="observed", kind="inter_queue", **base) == 1
    victims = "yunikorn_dashboard_preemption_victims_total"
    assert _value(samples, victims, queue="root.a", nature="observed", kind="quota", **base) == 3
    assert (
        _value(
            samples, "yunikorn_dashboard_observed_preemptions_predicted_total", kind="quota", **base
        )
        == 2
    )
    assert (
        _value(
            samples, "yunikorn_dashboard_observed_preemptions_agreed_total", kind="quota", **base
        )
        == 1
    )
    assert (
        _value(samples, "yunikorn_dashboard_prediction_agreement_ratio", kind="quota", **base)
        == 0.5
    )
    latency = "yunikorn_dashboard_run_latency_seconds"
    enforcement = {"kind": "quota_enforcement"}
    assert _value(samples, f"{latency}_bucket", le="1.0", **enforcement) == 0
    assert _value(samples, f"{latency}_bucket", le="2.5", **enforcement) == 1
    assert _value(samples, f"{latency}_count", **enforcement) == 1
    # SQLite computes it from Julian days: exact to well under a millisecond
    assert _value(samples, f"{latency}_sum", **enforcement) == pytest.approx(2.0, abs=1e-3)
    whatif = {"kind": "whatif_preempt"}
    assert _value(samples, f"{latency}_bucket", le="0.25", **whatif) == 0
    assert _value(samples, f"{latency}_bucket", le="0.5", **whatif) == 1
    assert _value(samples, f"{latency}_bucket", le="+Inf", **whatif) == 1
    assert _value(samples, f"{latency}_sum", **whatif) == pytest.approx(0.3, abs=1e-3)


def test_the_agreement_counted_in_the_database_is_the_run_pages(settings: Any) -> None:
    """agreement_counts() (one SQL query over every linked pair) and the tallies the
    triggers keep judge each observed run as the run page's comparison does: rounds'
    victims of the observed ask only, another order, empty sides, a victim on one side
    only."""
    from dashboard.metrics.counts import agreement_counts, from_tallies, tallied
    from dashboard.services.runs.observed import agreement

    snapshot = factories.SnapshotFactory.create()
    cases: list[tuple[str, list[tuple[str, str]], str, list[str]]] = [
        # predicted kind, its victims (key, ask), the observed ask, the observed victims
        (Run.Kind.QUOTA_ENFORCEMENT, [("a", ""), ("b", "")], "", ["a", "b"]),
        (Run.Kind.QUOTA_ENFORCEMENT, [("a", ""), ("b", "")], "", ["b", "a"]),
        (Run.Kind.QUOTA_ENFORCEMENT, [("a", ""), ("b", "")], "", ["a"]),
        (Run.Kind.QUOTA_ENFORCEMENT, [("a", "")], "", ["a", "c"]),
        (Run.Kind.QUOTA_ENFORCEMENT, [], "", []),
        (Run.Kind.QUOTA_ENFORCEMENT, [], "", ["a"]),
        (Run.Kind.ROUND, [("a", "ask-1"), ("b", "ask-2")], "ask-1", ["a"]),
        (Run.Kind.ROUND, [("a", "ask-1"), ("b", "ask-2")], "ask-2", ["a"]),
        (Run.Kind.ROUND, [("a", "ask-1"), ("b", "ask-2")], "", ["a", "b"]),
        (Run.Kind.QUOTA_ENFORCEMENT, [("a", "ask-1"), ("b", "ask-2")], "ask-1", ["a", "b"]),
    ]
    observed = []
    for n, (kind, theirs, ask, mine) in enumerate(cases):
        predicted = _run(snapshot, kind=kind, trigger=Run.Trigger.TIMER, idempotency_key=f"p{n}")
        for i, (key, their_ask) in enumerate(theirs):
            predicted.victims.create(position=i, allocation_key=key, ask=their_ask)
        run = _run(
            snapshot,
            kind=Run.Kind.QUOTA if n % 2 else Run.Kind.PREEMPT,
            trigger=Run.Trigger.OBSERVED,
            predicted=predicted,
            request={"ask": ask} if ask else {},
            idempotency_key=f"o{n}",
        )
        for i, key in enumerate(mine):
            run.victims.create(position=i, allocation_key=key)
        observed.append(run)
    expected: dict[str, tuple[int, int]] = {}
    for kind in (Run.Kind.QUOTA, Run.Kind.PREEMPT):
        judged = agreement(run for run in observed if run.kind == kind)
        expected[kind] = (judged.predicted, judged.agreed)
    counted = {row.kind: (row.linked, row.agreed) for row in agreement_counts()}
    assert counted == expected
    if tallied():  # PostgreSQL: its triggers judged each run alike as it was written
        kept = {row.kind: (row.linked, row.agreed) for row in from_tallies().agreement}
        assert kept == expected
    assert sum(agreed for _, agreed in counted.values()) == 6  # cases 0, 1, 4, 6, 8, 9


def test_a_scrape_past_its_deadline_answers_503_naming_it(settings: Any) -> None:
    """METRICS_DEADLINE_SECONDS bounds a scrape (on PostgreSQL also as its statement
    timeout): past it the answer is 503 naming the setting, not a late page."""
    snapshot = factories.SnapshotFactory.create()
    _run(snapshot, kind=Run.Kind.QUOTA_ENFORCEMENT, trigger=Run.Trigger.TIMER)
    settings.METRICS_DEADLINE_SECONDS = 1e-6
    answer = _scrape(settings)
    assert answer.status_code == 503
    text = answer.content.decode()
    assert "did not finish within 1e-06 s (METRICS_DEADLINE_SECONDS)" in text
    settings.METRICS_DEADLINE_SECONDS = 30
    assert _scrape(settings).status_code == 200

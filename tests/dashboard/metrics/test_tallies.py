"""The tallies behind /metrics: PostgreSQL's triggers keep the run history's counts in
every write's transaction, and a scrape exposes exactly the figures the history gives."""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta
from typing import Any

import factories
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from scenarios import T0

from dashboard import models
from dashboard.metrics import counts
from dashboard.metrics.collector import DashboardCollector
from dashboard.metrics.counts import from_history, from_tallies
from dashboard.metrics.text import render
from dashboard.services.runs.observed import link_prediction

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    """The tallies are PostgreSQL's (SQLite has no statement triggers: /metrics counts
    the history there); CI runs these on PostgreSQL."""
    if not counts.tallied():
        if os.environ.get("CI") == "true":
            pytest.fail("the tallies need PostgreSQL (set DATABASE_URL)")
        pytest.skip("the tallies need PostgreSQL (set DATABASE_URL)")


Run = models.PreemptionRun
NOW = T0 + timedelta(minutes=5)


def _run(snapshot: models.ClusterSnapshot, **fields: Any) -> models.PreemptionRun:
    return factories.make_run(snapshot, **fields)


def _victims(run: models.PreemptionRun, *keys: str, ask: str = "") -> None:
    models.RunVictim.objects.bulk_create(
        models.RunVictim(run=run, position=i, allocation_key=k, ask=ask) for i, k in enumerate(keys)
    )


def _history() -> None:
    """Runs of every kind, status and nature over two partitions and several queues:
    latencies on and between the histogram's bounds, linked pairs that agree and
    differ (rounds judged on the observed ask), unlinked and unfinished runs."""
    one = factories.SnapshotFactory.create()
    two = factories.SnapshotFactory.create(partition_name="other")
    n = 0
    for snapshot in (one, two):
        for seconds in (0.0, 0.05, 0.051, 0.3, 2.5, 299.999999, 300.0, 301.0, 9000.0):
            n += 1
            _run(snapshot, finished_at=T0 + timedelta(seconds=seconds), idempotency_key=f"w{n}")
        for i, queue in enumerate(["root.a", "root.a.x", "root.b", "root.a"]):
            n += 1
            predicted = _run(
                snapshot,
                kind=Run.Kind.QUOTA_ENFORCEMENT,
                trigger=Run.Trigger.TIMER,
                queue=queue,
                finished_at=T0 + timedelta(seconds=i * 0.7),
                idempotency_key=f"p{n}",
            )
            _victims(predicted, f"k{i}", f"k{i + 1}")
            observed = _run(
                snapshot,
                kind=Run.Kind.QUOTA,
                trigger=Run.Trigger.OBSERVED,
                queue=queue,
                predicted=predicted,
                finished_at=T0 + timedelta(seconds=9),
                idempotency_key=f"o{n}",
            )
            _victims(observed, f"k{i}", *([f"k{i + 1}"] if i % 2 else ["other"]))
        n += 1
        round_ = _run(
            snapshot,
            kind=Run.Kind.ROUND,
            trigger=Run.Trigger.TIMER,
            finished_at=T0 + timedelta(seconds=1),
            idempotency_key=f"r{n}",
        )
        _victims(round_, "a", ask="ask-1")
        models.RunVictim.objects.create(run=round_, position=5, allocation_key="b", ask="ask-2")
        for ask, keys in (("ask-1", ["a"]), ("ask-2", ["a"]), ("ask-3", [])):
            n += 1
            observed = _run(
                snapshot,
                kind=Run.Kind.PREEMPT,
                trigger=Run.Trigger.OBSERVED,
                queue="root.b",
                predicted=round_,
                request={"ask": ask},
                idempotency_key=f"o{n}",
            )
            _victims(observed, *keys)
        _run(snapshot, kind=Run.Kind.QUOTA, trigger=Run.Trigger.OBSERVED, idempotency_key=f"u{n}")
        _run(snapshot, kind=Run.Kind.QUOTA_ENFORCEMENT, status=Run.Status.RUNNING, queue="root.b")
        _run(snapshot, kind=Run.Kind.QUOTA_ENFORCEMENT, status=Run.Status.FAILED, queue="root.c")
        _run(snapshot, status=Run.Status.PENDING, idempotency_key=f"q{n}")


def _exposition(read: Any) -> bytes:
    return render(DashboardCollector(now=NOW, counts=read).collect())


def test_a_scrape_from_the_tallies_exposes_the_historys_figures() -> None:
    """On a built history, the exposition read from the tallies is byte for byte the
    one counted from every run and victim, and that one is what prometheus_client's
    own writer gives for the same figures."""
    _history()
    assert counts.tallied()
    tallied, counted = from_tallies(), from_history()
    assert tallied == counted
    assert len(counted.preemptions) >= 8
    assert {a.kind for a in counted.agreement} == {Run.Kind.QUOTA, Run.Kind.PREEMPT}
    assert 0 < sum(a.agreed for a in counted.agreement) < sum(a.linked for a in counted.agreement)
    assert {row.kind for row in counted.latency} >= {Run.Kind.WHATIF_PREEMPT, Run.Kind.ROUND}
    body = _exposition(from_tallies)
    assert body == _exposition(from_history)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DashboardCollector(now=NOW, counts=from_history))
    assert body == generate_latest(registry)
    assert b'kind="whatif_preempt",le="0.05"} 4.0' in body  # 0, 0.05 twice


def test_a_scrape_reads_no_run_or_victim_row(settings: Any) -> None:
    """What a scrape reads grows with queues and kinds, not with the history."""
    _history()
    settings.METRICS_TOKEN = "t"
    with CaptureQueriesContext(connection) as queries:
        from django.test import Client

        answer = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer t")
    assert answer.status_code == 200
    read = " ".join(q["sql"] for q in queries.captured_queries)
    assert "dashboard_preemptiontally" in read
    assert "dashboard_preemptionrun" not in read
    assert "dashboard_runvictim" not in read


def _same() -> counts.HistoryCounts:
    tallied = from_tallies()
    assert tallied == from_history()
    return tallied


def _preempted(kind: str = Run.Kind.QUOTA_ENFORCEMENT) -> tuple[int, int]:
    rows = [r for r in _same().preemptions if r.kind == kind]
    return sum(r.runs for r in rows), sum(r.victims for r in rows)


def _agreement() -> tuple[int, int]:
    rows = _same().agreement
    return sum(r.linked for r in rows), sum(r.agreed for r in rows)


def test_writes_links_and_deletes_move_the_tallies() -> None:
    """A run written, finished, given victims, linked (by the service), changed and
    deleted, a snapshot pruned, a partition deleted, victims truncated: after each,
    the tallies are the history's counts."""
    snapshot = factories.SnapshotFactory.create()
    predicted = _run(
        snapshot,
        kind=Run.Kind.QUOTA_ENFORCEMENT,
        trigger=Run.Trigger.TIMER,
        status=Run.Status.RUNNING,
        queue="root.a",
        request={"queue": "root.a", "new_max": {"vcore": 1000}},
    )
    assert _preempted() == (0, 0)  # not finished: not a preemption yet
    _victims(predicted, "a1", "a2")
    assert _preempted() == (0, 0)
    Run.objects.filter(pk=predicted.pk).update(
        status=Run.Status.DONE, finished_at=T0 + timedelta(seconds=1.5)
    )
    assert _preempted() == (1, 2)
    assert [(r.kind, r.runs) for r in _same().latency] == [(Run.Kind.QUOTA_ENFORCEMENT, 1)]

    observed = _run(
        snapshot,
        kind=Run.Kind.QUOTA,
        trigger=Run.Trigger.OBSERVED,
        queue="root.a",
        queued_at=T0 + timedelta(seconds=60),
        request={"queue": "root.a", "max": {"vcore": 1000}},
        idempotency_key="seen",
    )
    _victims(observed, "a2", "a1")
    assert _agreement() == (0, 0)
    assert link_prediction(observed) == predicted
    assert _agreement() == (1, 1)
    models.RunVictim.objects.create(run=observed, position=2, allocation_key="a3")
    assert _agreement() == (1, 0)
    models.RunVictim.objects.filter(run=observed, allocation_key="a3").delete()
    assert _agreement() == (1, 1)
    models.RunVictim.objects.filter(run=predicted, allocation_key="a1").update(allocation_key="b")
    assert _agreement() == (1, 0)
    assert _preempted(Run.Kind.QUOTA) == (1, 2)

    Run.objects.filter(pk=observed.pk).update(queue="root.b")  # moves to another queue
    assert [(r.queue, r.runs) for r in _same().preemptions if r.kind == Run.Kind.QUOTA] == [
        ("root.b", 1)
    ]

    models.ClusterSnapshot.objects.filter(pk=snapshot.pk).delete()  # pruned: runs stay
    assert _preempted() == (1, 2)
    predicted.refresh_from_db()
    predicted.delete()  # its victims go, the observed run loses its link
    assert _preempted() == (0, 0)
    assert _agreement() == (0, 0)
    assert _preempted(Run.Kind.QUOTA) == (1, 2)
    assert _same().latency == []

    Run.objects.filter(pk=observed.pk).delete()
    assert _same() == counts.HistoryCounts([], [], [])


def test_bulk_writes_a_partitions_deletion_and_a_truncate() -> None:
    """Bulk inserts and updates of many runs, a partition deleted with its runs, and a
    TRUNCATE of the victims (recounted) keep the tallies the history's counts."""
    one = factories.SnapshotFactory.create()
    two = factories.SnapshotFactory.create(partition_name="other")
    for snapshot in (one, two):
        made = Run.objects.bulk_create(
            Run(
                partition=snapshot.partition,
                snapshot=snapshot,
                kind=Run.Kind.QUOTA_ENFORCEMENT,
                trigger=Run.Trigger.TIMER,
                status=Run.Status.DONE,
                queue=f"root.q{i % 3}",
                queued_at=T0,
                finished_at=T0 + timedelta(seconds=i / 10),
            )
            for i in range(30)
        )
        seen = Run.objects.bulk_create(
            Run(
                partition=snapshot.partition,
                kind=Run.Kind.QUOTA,
                trigger=Run.Trigger.OBSERVED,
                status=Run.Status.DONE,
                queue=p.queue,
                queued_at=T0,
                predicted_id=p.pk,
            )
            for p in made
        )
        models.RunVictim.objects.bulk_create(
            models.RunVictim(run=r, position=0, allocation_key=f"v{i // 2}")
            for i, r in enumerate(x for pair in zip(made, seen, strict=True) for x in pair)
        )
    assert _agreement() == (60, 60)
    assert _preempted() == (60, 60)
    Run.objects.filter(kind=Run.Kind.QUOTA_ENFORCEMENT, queue="root.q0").update(
        status=Run.Status.FAILED
    )
    assert _preempted() == (40, 40)
    two.partition.delete()
    assert _preempted() == (20, 20)
    assert _agreement() == (30, 30)
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no checks pending: truncate
        cursor.execute("TRUNCATE dashboard_runvictim")
    assert _preempted() == (20, 0)
    assert _agreement() == (30, 30)  # no victims on either side: the same victims


def test_recount_metrics_checks_and_rebuilds_the_tallies() -> None:
    """``manage.py recount_metrics --check`` names tally rows that differ from the
    history; without ``--check`` the tallies are rebuilt from it."""
    _history()
    call_command("recount_metrics", "--check")
    models.PreemptionTally.objects.filter(kind=Run.Kind.QUOTA).update(runs=99)
    models.AgreementTally.objects.all().delete()
    with pytest.raises(CommandError, match="tally rows differ"):
        call_command("recount_metrics", "--check")
    call_command("recount_metrics")
    call_command("recount_metrics", "--check")
    assert from_tallies() == from_history()


def test_the_text_is_prometheus_clients_for_any_label_and_value() -> None:
    """Label values with quotes, backslashes, new lines and other scripts, +Inf, NaN and
    large values, a name prometheus_client would quote: the same bytes as its writer."""
    gauge = GaugeMetricFamily("a_ratio", 'help with "quotes"\nand \\', labels=["q", "r"])
    gauge.add_metric(['root."x"', "a\\b\nc"], float("inf"))
    gauge.add_metric(["root.é", "-"], float("nan"))
    gauge.add_metric(["root.z", ""], 12345678.0)
    counter = CounterMetricFamily("b", "plain", labels=["k"])
    counter.add_metric(["v"], 3)
    counter.add_metric(["w"], 4, created=1.5)
    odd = GaugeMetricFamily("odd.name", "dotted", labels=["x"])
    odd.add_metric(["y"], 1)
    families = [gauge, counter, odd, GaugeMetricFamily("empty", "none")]
    registry = CollectorRegistry(auto_describe=False)

    class Fixed:
        def collect(self) -> list[Any]:
            return families

    registry.register(Fixed())  # a Collector by its collect method
    assert render(families) == generate_latest(registry)


@pytest.mark.django_db(transaction=True)
def test_two_transactions_judging_one_run_take_turns() -> None:
    """An observed run's victims and its prediction's written by two transactions at
    once: the second waits for the first to commit, then judges the run on both."""
    snapshot = factories.SnapshotFactory.create()
    predicted = _run(snapshot, kind=Run.Kind.QUOTA_ENFORCEMENT, trigger=Run.Trigger.TIMER)
    _victims(predicted, "a")
    observed = _run(
        snapshot,
        kind=Run.Kind.QUOTA,
        trigger=Run.Trigger.OBSERVED,
        predicted=predicted,
        idempotency_key="seen",
    )
    _victims(observed, "a")
    assert _agreement() == (1, 1)
    written = threading.Event()
    failed: list[BaseException] = []

    def first() -> None:
        try:
            with transaction.atomic():
                models.RunVictim.objects.create(run=observed, position=1, allocation_key="b")
                written.set()
                time.sleep(1.0)  # still open while the second transaction writes
        except BaseException as exc:  # reported below, in the test's thread
            failed.append(exc)
            written.set()
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert written.wait(30)
    with transaction.atomic():
        models.RunVictim.objects.create(run=predicted, position=1, allocation_key="b")
    thread.join(30)
    assert failed == []
    assert _agreement() == (1, 1)  # both took a and b

"""Real Celery workers on real Redis: a receiver that fails twice gets
the alert on the third try (retries with backoff), exactly once, even with two workers
and the task message sent again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from alert_receivers import HttpReceiver, http_receiver
from integration_support import Cluster, wait_for

from dashboard import models, services
from dashboard.celery import app as celery_app

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SECRET = "integration-secret"
DONE = re.compile(r"Task dashboard\.deliver_alert\[[^\]]+\] succeeded")
RETRIED = re.compile(r"Task dashboard\.deliver_alert\[[^\]]+\] retry")


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    with http_receiver(HttpReceiver(secret=SECRET, fail_first=2, fail_status=503)) as r:
        yield r


def _count(cluster: Cluster, pattern: re.Pattern[str]) -> int:
    return sum(len(pattern.findall(proc.text())) for proc in cluster.procs)


def test_retries_after_receiver_failures_then_exactly_once(
    cluster: Cluster, receiver: HttpReceiver
) -> None:
    route = models.AlertRoute(name="ops", channel="webhook", url=receiver.url, secret=SECRET)
    route.full_clean()
    route.save()
    env = {"ALERT_DELIVERY_BACKOFF_SECONDS": "1", "ALERT_DELIVERY_MAX_ATTEMPTS": "5"}
    cluster.worker(**env)
    cluster.worker(**env)

    alert = services.raise_alert(
        models.Alert.Kind.SOURCE_FAILING, "cluster source prod is failing", level="error"
    )
    row = models.AlertDelivery.objects.get(alert=alert, route=route)

    def sent() -> bool:
        row.refresh_from_db()
        return row.status == models.AlertDelivery.Status.SENT

    wait_for(sent, 90, "the delivery to be sent", cluster.procs[0])
    assert receiver.answered == [503, 503, 200]
    assert len(receiver.got) == 1
    assert receiver.got[0].signature_ok is True
    assert receiver.got[0].json()["alert"]["id"] == alert.pk
    assert row.attempts == 3
    assert _count(cluster, RETRIED) == 2

    # the same task message twice more (a broker redelivery, a resend): nothing is sent
    for _ in range(2):
        celery_app.send_task("dashboard.deliver_alert", args=(row.pk,))
    wait_for(lambda: _count(cluster, DONE) >= 3, 60, "the repeated tasks to finish")
    assert receiver.answered == [503, 503, 200]
    assert len(receiver.got) == 1
    row.refresh_from_db()
    assert (row.status, row.attempts) == ("sent", 3)
    assert models.AlertDelivery.objects.filter(alert=alert).count() == 1


def test_metrics_show_what_a_worker_process_did(cluster: Cluster, settings: Any) -> None:
    """A poll made by a Celery worker process (failing: nothing listens) shows in the
    /metrics answer of this process: the figures are read from the database."""
    from alert_receivers import free_port
    from django.test import Client
    from prometheus_client.parser import text_string_to_metric_families

    from dashboard.sources.models import ClusterSource

    partition_cluster = models.Cluster.objects.create(name="prod")
    source = ClusterSource.objects.create(
        name="prod-yk", base_url=f"http://127.0.0.1:{free_port()}", cluster=partition_cluster
    )
    cluster.worker(SOURCES_HTTP_RETRIES="0", SOURCES_HTTP_TIMEOUT="2")
    for _ in range(2):
        celery_app.send_task("dashboard.poll_cluster_source", args=(source.pk, True))

    def polled_twice() -> bool:
        stats = models.SourcePollStats.objects.filter(source=source).first()
        return stats is not None and stats.polls == 2

    wait_for(polled_twice, 60, "two polls by the worker", cluster.procs[0])
    settings.METRICS_TOKEN = "t"
    answer = Client(HTTP_HOST="localhost").get("/metrics", HTTP_AUTHORIZATION="Bearer t")
    assert answer.status_code == 200
    values = {
        (s.name, s.labels.get("source")): s.value
        for family in text_string_to_metric_families(answer.content.decode())
        for s in family.samples
    }
    assert values[("yunikorn_dashboard_source_poll_failures_total", "prod-yk")] == 2
    assert values[("yunikorn_dashboard_source_poll_duration_seconds_count", "prod-yk")] == 2
    assert values[("yunikorn_dashboard_source_consecutive_failures", "prod-yk")] == 2
    assert values[("yunikorn_dashboard_source_healthy", "prod-yk")] == 0

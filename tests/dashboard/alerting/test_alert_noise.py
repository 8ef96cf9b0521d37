"""Alert noise at the routes: one alert per cause (a quota change, a source, a cluster's
refused uploads), a per-route rate limit, and one digest later carrying every held
alert, to a real local webhook receiver (signed) and a real SMTP server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import factories
import pytest
from alert_receivers import HttpReceiver, MailBox
from django.test import Client
from scenarios import T0

from dashboard import models, services
from dashboard.alerting import delivery, noise

pytestmark = pytest.mark.django_db

SECRET = "noise-secret"
Alert = models.Alert
Delivery = models.AlertDelivery


@pytest.fixture(autouse=True)
def _digest_after_ten_minutes(settings: Any) -> None:
    settings.ALERT_DIGEST_SECONDS = 600.0
    settings.ALERT_HTTP_TIMEOUT = 5.0


@pytest.fixture
def webhook_secret() -> str:
    return SECRET


@pytest.fixture
def committed(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[..., Any]:
    """Run a call as production does: the deliveries are sent once it commits (eagerly)."""

    def run(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return call(*args, **kwargs)

    return run


def _route(url: str, **fields: Any) -> models.AlertRoute:
    route = models.AlertRoute(
        name=fields.pop("name", "ops"), channel="webhook", url=url, min_level="info", **fields
    )
    route.secret = SECRET
    route.full_clean()
    route.save()
    return route


def _change(partition: models.Partition) -> models.QuotaChange:
    return models.QuotaChange.objects.create(
        partition=partition,
        queue_path="root.a",
        state=models.QuotaChange.State.WAITING,
        changed_at=T0,
        deadline=T0 + timedelta(seconds=600),
    )


def _raise(
    committed: Callable[..., Any], kind: str, message: str, at: datetime, **kwargs: Any
) -> Alert:
    level = kwargs.pop("level", Alert.Level.ERROR)
    alert: Alert = committed(services.raise_alert, kind, message, level=level, now=at, **kwargs)
    return alert


def test_refused_uploads_page_a_route_once_then_one_digest(
    webhook: HttpReceiver, committed: Any
) -> None:
    """32 different refused uploads: the route gets the first at once; the other 31 are
    held (same cause) and arrive in one signed digest once the first has waited
    ALERT_DIGEST_SECONDS; nothing is sent twice."""
    route = _route(webhook.url)
    alerts = [
        _raise(
            committed,
            Alert.Kind.IMPORT_FAILED,
            f"snapshot upload-{i}.json refused: queues: not a list",
            T0 + timedelta(seconds=i),
        )
        for i in range(32)
    ]
    assert len(webhook.got) == 1
    assert webhook.got[0].json()["alert"]["id"] == alerts[0].pk
    held = Delivery.objects.filter(route=route, status="held")
    assert held.count() == 31
    assert {d.cause for d in held} == {"import_failed:-"}
    assert "same cause as delivery" in held.first().note  # type: ignore[union-attr]

    # not due yet: nothing more is sent
    assert committed(delivery.send_digests, T0 + timedelta(seconds=599)) == []
    assert len(webhook.got) == 1
    [digest_id] = committed(delivery.send_digests, T0 + timedelta(seconds=601))
    assert len(webhook.got) == 2
    got = webhook.got[1]
    assert got.signature_ok is True
    body = got.json()
    assert body["alert"]["kind"] == "digest"
    assert body["alert"]["count"] == 31
    assert body["alert"]["level"] == "error"
    assert "31 alerts held for route ops" in body["alert"]["message"]
    assert "Import failed: 31" in body["alert"]["message"]
    assert [e["id"] for e in body["digest"]] == [a.pk for a in alerts[1:]]
    assert body["digest"][0]["message"] == "snapshot upload-1.json refused: queues: not a list"
    digest = Delivery.objects.get(pk=digest_id)
    assert (digest.is_digest, digest.status, digest.alert) == (True, "sent", None)
    assert Delivery.objects.filter(digest=digest, status="digested").count() == 31
    # a second sweep finds nothing held: no second digest
    assert committed(delivery.send_digests, T0 + timedelta(seconds=1300)) == []
    assert len(webhook.got) == 2


def test_one_quota_change_is_one_routed_alert(webhook: HttpReceiver, committed: Any) -> None:
    """Its timer, its firing, the observed enforcement and a retime are one cause: the
    first is sent at once, the three others (no more severe) wait for the digest."""
    partition = factories.PartitionFactory.create(cluster__name="prod")
    route = _route(webhook.url)
    where = {"partition": partition, "queue": "root.a", "change": _change(partition)}
    steps = [
        (Alert.Kind.TIMER, "warning", "root.a: timer started"),
        (Alert.Kind.QUOTA, "info", "root.a: quota change fired"),
        (Alert.Kind.QUOTA_OBSERVED, "info", "root.a: observed: the scheduler enforced it"),
        (Alert.Kind.TIMER, "warning", "root.a: timer retimed"),
    ]
    raised = [
        _raise(committed, kind, message, T0 + timedelta(seconds=i), level=level, **where)
        for i, (kind, level, message) in enumerate(steps)
    ]
    assert [g.json()["alert"]["id"] for g in webhook.got] == [raised[0].pk]
    rows = Delivery.objects.filter(route=route).order_by("created_at", "pk")
    assert [r.status for r in rows] == ["sent", "held", "held", "held"]
    committed(delivery.send_digests, T0 + timedelta(seconds=700))
    assert [e["id"] for e in webhook.got[-1].json()["digest"]] == [a.pk for a in raised[1:]]


def test_a_more_severe_alert_of_a_cause_is_not_held(webhook: HttpReceiver, committed: Any) -> None:
    partition = factories.PartitionFactory.create(cluster__name="prod")
    route = _route(webhook.url)
    where = {"partition": partition, "queue": "root.a", "change": _change(partition)}
    _raise(committed, Alert.Kind.TIMER, "timer started", T0, level="info", **where)
    _raise(committed, Alert.Kind.QUOTA, "fired", T0 + timedelta(seconds=1), level="info", **where)
    _raise(committed, Alert.Kind.RUN_FAILED, "run failed", T0 + timedelta(seconds=2), **where)
    _raise(committed, Alert.Kind.QUOTA, "again", T0 + timedelta(seconds=3), **where)
    assert [g.json()["alert"]["message"] for g in webhook.got] == ["timer started", "run failed"]
    statuses = Delivery.objects.filter(route=route).order_by("created_at").values_list("status")
    assert [s for (s,) in statuses] == ["sent", "held", "sent", "held"]


def test_a_trickling_source_failing_then_stale_is_one_alert(
    webhook: HttpReceiver, committed: Any
) -> None:
    partition = factories.PartitionFactory.create(cluster__name="prod")
    _route(webhook.url)
    failing = "cluster source prod-yk (cluster prod, partition default) has been failing"
    stale = "cluster source prod-yk (cluster prod, partition default) is stale"
    _raise(committed, Alert.Kind.SOURCE_FAILING, failing, T0, partition=partition)
    _raise(
        committed, Alert.Kind.SOURCE_FAILING, stale, T0 + timedelta(seconds=60), partition=partition
    )
    _raise(
        committed,
        Alert.Kind.SCHEDULER_UNHEALTHY,
        "unhealthy",
        T0 + timedelta(seconds=90),
        partition=partition,
    )
    assert [g.json()["alert"]["message"] for g in webhook.got] == [failing]
    # a recovery is news of its own
    _raise(
        committed,
        Alert.Kind.SOURCE_RECOVERED,
        "polled again",
        T0 + timedelta(seconds=120),
        partition=partition,
        level="info",
    )
    assert webhook.got[-1].json()["alert"]["message"] == "polled again"


def test_the_rate_limit_holds_alerts_beyond_it_for_the_digest(
    webhook: HttpReceiver, committed: Any
) -> None:
    """Different causes, 3 per 10 minutes: 3 sent, the next held; after the window the
    route sends again; the digest carries the held ones."""
    route = _route(webhook.url, rate_limit=3, rate_window_seconds=600)
    for i in range(5):
        _raise(committed, Alert.Kind.ENGINE, f"engine problem {i}", T0 + timedelta(seconds=i))
    assert [g.json()["alert"]["message"] for g in webhook.got] == [
        "engine problem 0",
        "engine problem 1",
        "engine problem 2",
    ]
    held = Delivery.objects.filter(route=route, status="held")
    assert held.count() == 2
    assert all("rate limit: 3 alerts per 600 s reached" in d.note for d in held)
    # the window moved on: a new cause is sent at once, the held ones wait for the digest
    _raise(committed, Alert.Kind.ENGINE, "engine problem 5", T0 + timedelta(seconds=700))
    assert webhook.got[-1].json()["alert"]["message"] == "engine problem 5"
    committed(delivery.send_digests, T0 + timedelta(seconds=700))
    body = webhook.got[-1].json()
    assert body["alert"]["kind"] == "digest"
    assert [e["message"] for e in body["digest"]] == ["engine problem 3", "engine problem 4"]


def test_a_route_without_limit_sends_every_cause(webhook: HttpReceiver, committed: Any) -> None:
    _route(webhook.url, rate_limit=0)
    for i in range(15):
        _raise(committed, Alert.Kind.ENGINE, f"engine problem {i}", T0 + timedelta(seconds=i))
    assert len(webhook.got) == 15


def test_limits_count_per_route(webhook: HttpReceiver, committed: Any) -> None:
    """Each route has its own window: a full route holds, another sends."""
    full = _route(webhook.url, name="full", rate_limit=1)
    _route(webhook.url, name="roomy", rate_limit=5)
    for i in range(3):
        _raise(committed, Alert.Kind.ENGINE, f"problem {i}", T0 + timedelta(seconds=i))
    sent = [(g.json()["route"], g.json()["alert"]["message"]) for g in webhook.got]
    assert sent.count(("full", "problem 0")) == 1
    assert [m for r, m in sent if r == "roomy"] == ["problem 0", "problem 1", "problem 2"]
    assert Delivery.objects.filter(route=full, status="held").count() == 2


def test_a_digest_by_email_lists_the_held_alerts(
    mailbox: MailBox, committed: Any, settings: Any
) -> None:
    settings.EMAIL_HOST, settings.EMAIL_PORT = mailbox.host, mailbox.port
    route = models.AlertRoute(
        name="mail", channel="email", email_to="ops@example.org", min_level="info", rate_limit=1
    )
    route.full_clean()
    route.save()
    for i in range(3):
        _raise(committed, Alert.Kind.ENGINE, f"problem {i}", T0 + timedelta(seconds=i))
    assert len(mailbox.messages) == 1
    committed(delivery.send_digests, T0 + timedelta(seconds=700))
    assert len(mailbox.messages) == 2
    text = mailbox.messages[1].get_payload()
    assert "2 alerts held for route mail" in str(text)
    assert "- [error] Engine: problem 1" in str(text)
    assert "- [error] Engine: problem 2" in str(text)


def test_cause_keys() -> None:
    partition = factories.PartitionFactory.create(cluster__name="prod")
    change = _change(partition)
    made = Alert(kind="timer", message="m", partition=partition, change=change)
    assert noise.cause_of(made) == f"change:{change.pk}"
    source = Alert(kind="source_failing", message="cluster source yk is failing")
    assert noise.cause_of(source) == "source:name:yk"
    one = Alert(kind="engine", message="a", partition=partition)
    other = Alert(kind="engine", message="b", partition=partition)
    assert noise.cause_of(one) != noise.cause_of(other)


def test_the_api_shows_the_limits_and_held_deliveries(
    webhook: HttpReceiver, committed: Any
) -> None:
    staff = factories.UserFactory.create(is_staff=True)
    client = Client()
    client.force_login(staff)

    def post_route(window: int) -> Any:
        return client.post(
            "/api/alert-routes/",
            {
                "name": "api route",
                "channel": "webhook",
                "url": webhook.url,
                "secret": SECRET,
                "min_level": "info",
                "rate_limit": 1,
                "rate_window_seconds": window,
            },
            content_type="application/json",
        )

    answer = post_route(30)
    assert answer.status_code == 400
    assert "rate_window_seconds" in answer.json()
    answer = post_route(120)
    assert answer.status_code == 201, answer.content
    assert (answer.json()["rate_limit"], answer.json()["rate_window_seconds"]) == (1, 120)
    for i in range(2):
        _raise(committed, Alert.Kind.ENGINE, f"problem {i}", T0 + timedelta(seconds=i))
    listed = client.get("/api/alert-deliveries/?status=held").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert len(rows) == 1
    assert rows[0]["note"].startswith("rate limit: 1 alerts per 120 s")


def test_the_delivery_log_page_shows_held_rows_and_digests(
    webhook: HttpReceiver, committed: Any
) -> None:
    _route(webhook.url, rate_limit=1)
    for i in range(3):
        _raise(committed, Alert.Kind.ENGINE, f"problem <{i}>", T0 + timedelta(seconds=i))
    [digest_id] = committed(delivery.send_digests, T0 + timedelta(seconds=700))
    client = Client()
    client.force_login(factories.UserFactory.create(is_staff=True))
    page = client.get("/alerts/deliveries/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "2 held alerts" in html
    assert f"in digest {digest_id}" in html
    assert "rate limit: 1 alerts per 3600 s reached" in html
    assert "problem &lt;1&gt;" in html  # escaped
    held = client.get("/alerts/deliveries/?status=digested").content.decode()
    assert held.count('data-testid="delivery"') == 2

"""Alert routing: routes match alerts by cluster, kind and level; deliveries reach local
receivers (a webhook server checking the HMAC signature, a Slack-compatible receiver, an
SMTP server), once per alert and route, retried with backoff after a failure a later
try may cure, never after a permanent one; staff see the log and test a route."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import factories
import pytest
from alert_receivers import HttpReceiver, MailBox, http_receiver
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.test import Client
from scenarios import T0

from dashboard import models, services
from dashboard.alerting import delivery, payload

pytestmark = pytest.mark.django_db

SECRET = "route-secret-\u00e9"  # non-ASCII: the key is its UTF-8 bytes

Alert = models.Alert
Route = models.AlertRoute
Delivery = models.AlertDelivery


@pytest.fixture(autouse=True)
def _quick_backoff(settings: Any) -> None:
    settings.ALERT_DELIVERY_BACKOFF_SECONDS = 5.0
    settings.ALERT_DELIVERY_MAX_ATTEMPTS = 4
    settings.ALERT_HTTP_TIMEOUT = 5.0


@pytest.fixture
def webhook_secret() -> str:
    return SECRET


@pytest.fixture
def raise_committed(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[..., models.Alert]:
    """raise_alert as production calls it: the deliveries are sent once it commits
    (Celery runs them eagerly here)."""

    def raise_it(**kwargs: Any) -> models.Alert:
        partition = kwargs.pop("partition", None)
        with django_capture_on_commit_callbacks(execute=True):
            return services.raise_alert(
                kwargs.pop("kind", Alert.Kind.SOURCE_FAILING),
                kwargs.pop("message", "cluster source prod is failing"),
                level=kwargs.pop("level", Alert.Level.ERROR),
                partition=partition,
                now=T0,
                **kwargs,
            )

    return raise_it


def _webhook_route(url: str, **fields: Any) -> models.AlertRoute:
    route = Route(name=fields.pop("name", "ops webhook"), channel="webhook", url=url, **fields)
    route.secret = fields.get("secret", SECRET)
    route.full_clean()
    route.save()
    return route


def test_webhook_gets_one_signed_json_body(webhook: HttpReceiver, raise_committed: Any) -> None:
    """A matching alert reaches the webhook once, signed with the route's secret over the
    timestamp and body; the body follows schema v1 and the row says sent."""
    partition = factories.PartitionFactory.create(cluster__name="prod")
    route = _webhook_route(webhook.url, cluster=partition.cluster)
    alert = raise_committed(partition=partition, queue="root.a")

    assert len(webhook.got) == 1
    got = webhook.got[0]
    assert got.signature_ok is True
    body = got.json()
    assert body["schema"] == "yunikorn-dashboard.alert.v1"
    assert body["test"] is False
    assert body["route"] == "ops webhook"
    assert body["alert"]["id"] == alert.pk
    assert body["alert"]["kind"] == "source_failing"
    assert body["alert"]["level"] == "error"
    assert body["alert"]["cluster"] == "prod"
    assert body["alert"]["partition"] == "default"
    assert body["alert"]["queue"] == "root.a"
    assert body["alert"]["message"] == "cluster source prod is failing"
    assert body["alert"]["created_at"] == "2026-09-01T10:00:00Z"
    row = Delivery.objects.get(alert=alert, route=route)
    assert got.headers["x-dashboard-delivery"] == str(row.pk)
    assert (row.status, row.attempts, row.response_status) == ("sent", 1, 200)
    assert row.sent_at is not None


def test_wrong_secret_is_refused_by_the_receiver_and_not_retried(
    webhook: HttpReceiver, raise_committed: Any
) -> None:
    """A receiver that cannot verify the signature answers 401: a permanent failure."""
    route = _webhook_route(webhook.url, secret="another secret")
    alert = raise_committed()
    row = Delivery.objects.get(alert=alert, route=route)
    assert webhook.answered == [401]
    assert webhook.got == []
    assert row.status == "failed"
    assert "HTTP 401" in row.last_error
    assert "not retried" in row.last_error


@pytest.mark.parametrize(
    ("route_fields", "matches"),
    [
        ({}, True),
        ({"kind": "source_failing"}, True),
        ({"kind": "quota"}, False),
        ({"min_level": "error"}, True),
        ({"min_level": "warning"}, True),
        ({"enabled": False}, False),
    ],
)
def test_routes_match_kind_level_and_enabled(
    webhook: HttpReceiver, raise_committed: Any, route_fields: dict[str, Any], matches: bool
) -> None:
    _webhook_route(webhook.url, **route_fields)
    alert = raise_committed()
    assert Delivery.objects.filter(alert=alert).exists() == matches
    assert len(webhook.got) == (1 if matches else 0)


def test_a_less_severe_alert_does_not_match(webhook: HttpReceiver, raise_committed: Any) -> None:
    _webhook_route(webhook.url, min_level="error")
    raise_committed(level=Alert.Level.WARNING)
    assert Delivery.objects.count() == 0
    assert webhook.got == []


def test_routes_match_their_cluster_only(webhook: HttpReceiver, raise_committed: Any) -> None:
    prod = factories.PartitionFactory.create(cluster__name="prod")
    test = factories.PartitionFactory.create(cluster__name="test")
    _webhook_route(webhook.url, cluster=prod.cluster)
    raise_committed(partition=test, message="on test")
    raise_committed(partition=prod, message="on prod")
    assert [r.json()["alert"]["message"] for r in webhook.got] == ["on prod"]


def test_a_repeat_of_an_unread_alert_sends_nothing_new(
    webhook: HttpReceiver, raise_committed: Any
) -> None:
    """raise_alert groups a repeat into the unread alert (count + 1): no new delivery."""
    _webhook_route(webhook.url)
    first = raise_committed()
    second = raise_committed()
    assert first.pk == second.pk
    assert Delivery.objects.count() == 1
    assert len(webhook.got) == 1


def test_one_delivery_row_per_alert_and_route(webhook: HttpReceiver) -> None:
    route = _webhook_route(webhook.url)
    alert = factories.AlertFactory.create()
    Delivery.objects.create(alert=alert, route=route, created_at=T0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Delivery.objects.create(alert=alert, route=route, created_at=T0)
    assert delivery.queue_deliveries(alert, T0) == []  # already queued: nothing more


def test_failures_are_retried_with_backoff_then_sent_once(webhook: HttpReceiver) -> None:
    """Two 503 answers: the row goes back to pending with the next try 5 s, then 10 s
    later (exponential backoff); a call before it is due sends nothing; the third try
    is sent, and a further call never sends it again."""
    webhook.fail_first = 2
    route = _webhook_route(webhook.url)
    alert = factories.AlertFactory.create()
    (pk,) = delivery.queue_deliveries(alert, T0)

    first = delivery.deliver(pk, T0)
    assert (first.status, first.retry_in) == ("pending", 5.0)
    row = Delivery.objects.get(pk=pk)
    assert row.next_attempt_at == T0 + timedelta(seconds=5)
    assert "HTTP 503" in row.last_error

    early = delivery.deliver(pk, T0 + timedelta(seconds=2))
    assert (early.status, early.retry_in) == ("pending", 3.0)
    assert webhook.answered == [503]

    second = delivery.deliver(pk, T0 + timedelta(seconds=5))
    assert (second.status, second.retry_in) == ("pending", 10.0)
    third = delivery.deliver(pk, T0 + timedelta(seconds=15))
    assert third.status == "sent"
    again = delivery.deliver(pk, T0 + timedelta(seconds=60))
    assert again.status == "sent"

    assert webhook.answered == [503, 503, 200]
    assert len(webhook.got) == 1
    row = Delivery.objects.get(pk=pk)
    assert (row.status, row.attempts, row.route_id) == ("sent", 3, route.pk)


def test_the_last_try_fails_for_good(webhook: HttpReceiver) -> None:
    webhook.fail_first = 100
    _webhook_route(webhook.url)
    (pk,) = delivery.queue_deliveries(factories.AlertFactory.create(), T0)
    when = T0
    for _ in range(4):
        outcome = delivery.deliver(pk, when)
        when += timedelta(seconds=outcome.retry_in or 0)
    row = Delivery.objects.get(pk=pk)
    assert (row.status, row.attempts) == ("failed", 4)
    assert "no tries left" in row.last_error
    assert len(webhook.answered) == 4


def test_an_unreachable_target_is_retried(settings: Any) -> None:
    """Nothing listens on the port: a connection failure, tried again later."""
    from alert_receivers import free_port

    _webhook_route(f"http://127.0.0.1:{free_port()}/hook")
    (pk,) = delivery.queue_deliveries(factories.AlertFactory.create(), T0)
    outcome = delivery.deliver(pk, T0)
    assert outcome.status == "pending"
    assert "cannot reach the target" in Delivery.objects.get(pk=pk).last_error


def test_a_worker_lost_mid_send_is_not_sent_again(webhook: HttpReceiver) -> None:
    """A row left 'sending' by a lost worker is failed once its lease is over, not resent."""
    _webhook_route(webhook.url)
    (pk,) = delivery.queue_deliveries(factories.AlertFactory.create(), T0)
    Delivery.objects.filter(pk=pk).update(
        status="sending", attempts=1, lease_until=T0 + timedelta(seconds=60)
    )
    assert delivery.deliver(pk, T0).status == "sending"
    assert delivery.expire_stale(T0 + timedelta(seconds=30)) == 0
    assert delivery.expire_stale(T0 + timedelta(seconds=61)) == 1
    assert delivery.deliver(pk, T0 + timedelta(seconds=62)).status == "failed"
    assert webhook.answered == []


def test_webhook_targets_obey_the_source_address_policy(
    settings: Any, webhook: HttpReceiver
) -> None:
    """An IP literal in a denied network is refused when saved; a target that the policy
    refuses when sending (here: loopback denied by SOURCES_DENIED_NETWORKS) fails for good."""
    with pytest.raises(ValidationError, match=r"169\.254\.0\.0/16"):
        Route(
            name="metadata", channel="webhook", url="http://169.254.169.254/x", secret="s"
        ).full_clean()
    route = _webhook_route(webhook.url.replace("127.0.0.1", "localhost"))
    settings.SOURCES_DENIED_NETWORKS = ["127.0.0.0/8", "::1/128"]
    (pk,) = delivery.queue_deliveries(factories.AlertFactory.create(), T0)
    assert delivery.deliver(pk, T0).status == "failed"
    row = Delivery.objects.get(pk=pk, route=route)
    assert "address policy" in row.last_error
    assert "SOURCES_DENIED_NETWORKS" in row.last_error
    assert webhook.answered == []


def test_slack_compatible_receiver_gets_text(raise_committed: Any) -> None:
    with http_receiver(HttpReceiver()) as slack:
        route = Route(name="slack", channel="slack", url=slack.url)
        route.full_clean()
        route.save()
        raise_committed(message="queue <root.a> & friends over max", queue="root.a")
    assert len(slack.got) == 1
    assert slack.got[0].headers["content-type"] == "application/json"
    assert slack.got[0].json() == {
        "text": "[ERROR] Cluster source failing (root.a): "
        "queue &lt;root.a&gt; &amp; friends over max"
    }


def test_email_goes_through_smtp(mailbox: MailBox, settings: Any, raise_committed: Any) -> None:
    settings.EMAIL_HOST = mailbox.host
    settings.EMAIL_PORT = mailbox.port
    settings.ALERT_EMAIL_FROM = "dashboard@example.test"
    route = Route(name="mail", channel="email", email_to="ops@example.test, oncall@example.test")
    route.full_clean()
    route.save()
    alert = raise_committed(partition=factories.PartitionFactory.create(cluster__name="prod"))
    assert mailbox.recipients == [["ops@example.test", "oncall@example.test"]]
    mail = mailbox.messages[0]
    assert mail["From"] == "dashboard@example.test"
    assert mail["Subject"] == "ERROR [prod] Cluster source failing: cluster source prod is failing"
    text = mail.get_payload()
    assert isinstance(text, str)
    assert "Cluster: prod" in text
    assert "cluster source prod is failing" in text
    assert Delivery.objects.get(alert=alert).status == "sent"


def test_routes_refuse_incomplete_settings() -> None:
    with pytest.raises(ValidationError, match="signing secret"):
        Route(name="a", channel="webhook", url="http://hooks.example.test/x").full_clean()
    with pytest.raises(ValidationError, match="recipient"):
        Route(name="b", channel="email").full_clean()
    with pytest.raises(ValidationError, match="not an e-mail address"):
        Route(name="c", channel="email", email_to="ops@example.test, nobody").full_clean()


def test_signature_verifies_exact_bytes_only() -> None:
    body = payload.encode(
        {
            "schema": payload.SCHEMA,
            "delivery": 1,
            "test": True,
            "route": "r",
            "alert": payload.alert_body(
                alert_id=None,
                kind="engine",
                kind_label="Engine",
                level="info",
                message="m",
                cluster=None,
                partition=None,
                queue="",
                run=None,
                change=None,
                count=1,
                created_at=T0,
                last_seen_at=T0,
            ),
        }
    )
    signature = payload.sign("k", 1700000000, body)
    assert payload.verify("k", "1700000000", body, signature)
    assert not payload.verify("k", "1700000001", body, signature)
    assert not payload.verify("k", "1700000000", body + b" ", signature)
    assert not payload.verify("other", "1700000000", body, signature)


# -- pages and API -----------------------------------------------------------------------


def test_staff_test_a_route_from_its_page_with_csrf(
    webhook: HttpReceiver, staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The test button posts with the page's CSRF token; the test delivery reaches the
    receiver and shows in the route's log.  A post without the token is refused."""
    route = _webhook_route(webhook.url)
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    page = client.get(f"/alerts/routes/{route.pk}/")
    assert page.status_code == 200
    token = page.context["csrf_token"]
    assert client.post(f"/alerts/routes/{route.pk}/test/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/alerts/routes/{route.pk}/test/", {"csrfmiddlewaretoken": token})
    assert answer.status_code == 302
    assert len(webhook.got) == 1
    body = webhook.got[0].json()
    assert body["test"] is True
    assert body["alert"]["id"] is None
    assert webhook.got[0].signature_ok is True
    log = client.get(f"/alerts/routes/{route.pk}/")
    assert b'data-testid="delivery-status">Sent<' in log.content
    assert SECRET.encode() not in log.content


def test_delivery_log_is_for_staff_only(webhook: HttpReceiver, viewer: Any, staff: Any) -> None:
    route = _webhook_route(webhook.url)
    Delivery.objects.create(
        alert=factories.AlertFactory.create(message="<b>x</b>"), route=route, created_at=T0
    )
    client = Client()
    client.force_login(viewer)
    for url in ("/alerts/deliveries/", "/alerts/routes/", f"/alerts/routes/{route.pk}/"):
        assert client.get(url).status_code == 403
    assert client.post(f"/alerts/routes/{route.pk}/test/").status_code == 403
    client.force_login(staff)
    page = client.get("/alerts/deliveries/")
    assert page.status_code == 200
    assert b"&lt;b&gt;x&lt;/b&gt;" in page.content
    assert b"<b>x</b>" not in page.content


def test_api_routes_and_log(
    webhook: HttpReceiver, staff_client: Any, viewer_client: Any, raise_committed: Any
) -> None:
    """Staff make a route over the API (secret write-only); the log lists its delivery;
    non-staff users are refused both."""
    made = staff_client.post(
        "/api/alert-routes/",
        {"name": "api hook", "channel": "webhook", "url": webhook.url, "secret": SECRET},
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert "secret" not in made.json()
    assert made.json()["secret_state"] == "set"
    missing = staff_client.post(
        "/api/alert-routes/",
        {"name": "no secret", "channel": "webhook", "url": webhook.url},
        format="json",
    )
    assert missing.status_code == 400
    assert missing.json() == {"secret": ["a webhook route needs a signing secret"]}
    alert = raise_committed()
    log = staff_client.get("/api/alert-deliveries/").json()
    assert [(r["alert"], r["status"], r["route_name"]) for r in log["results"]] == [
        (alert.pk, "sent", "api hook")
    ]
    assert viewer_client.get("/api/alert-deliveries/").status_code == 403
    assert viewer_client.get("/api/alert-routes/").status_code == 403

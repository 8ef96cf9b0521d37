"""The sources API and admin: staff writes, validation, and a token that is sent as a
Bearer header but never shown back (API, pages, admin, logs, errors, alerts)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.conf import settings
from django.template import Context, Template
from django.test import Client
from rest_framework.test import APIClient
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db

TOKEN = "tok-3f9a-SECRET-b71c"


def body(url: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "acme-ml",
        "base_url": url,
        "partition": "default",
        "poll_interval": 60,
        "alert_after": 300,
    }
    data.update(extra)
    return data


def test_staff_creates_a_source_and_the_token_is_write_only(
    staff_client: APIClient, yunikorn: FakeYuniKorn
) -> None:
    """The token is accepted, stored, and answered only as token_state "set"."""
    response = staff_client.post(
        "/api/sources/", body(yunikorn.url + "/", token=TOKEN), format="json"
    )

    assert response.status_code == 201, response.content
    assert TOKEN not in response.content.decode()
    assert "token" not in response.json()
    assert response.json()["token_state"] == "set"
    assert response.json()["base_url"] == yunikorn.url  # normalised: no trailing slash
    source = ClusterSource.objects.get()
    assert source.token == TOKEN
    listing = staff_client.get("/api/sources/")
    detail = staff_client.get(f"/api/sources/{source.pk}/")
    assert TOKEN not in listing.content.decode()
    assert TOKEN not in detail.content.decode()
    assert detail.json()["status"] == "new"


def test_update_without_token_keeps_it_and_empty_clears_it(
    staff_client: APIClient, yunikorn: FakeYuniKorn
) -> None:
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, token=TOKEN, next_poll_at=T0
    )

    kept = staff_client.patch(f"/api/sources/{source.pk}/", {"poll_interval": 30}, format="json")
    assert kept.status_code == 200, kept.content
    source.refresh_from_db()
    assert source.token == TOKEN
    assert source.poll_interval == 30
    assert source.next_poll_at is None  # an edit of the interval polls at the next tick

    cleared = staff_client.patch(f"/api/sources/{source.pk}/", {"token": ""}, format="json")
    assert cleared.json()["token_state"] == "not set"
    source.refresh_from_db()
    assert source.token == ""


def test_writes_need_staff_reads_need_a_user(
    viewer_client: APIClient, yunikorn: FakeYuniKorn
) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url, token=TOKEN)

    assert APIClient().get("/api/sources/").status_code in (401, 403)
    read = viewer_client.get(f"/api/sources/{source.pk}/")
    assert read.status_code == 200
    assert TOKEN not in read.content.decode()
    assert viewer_client.post("/api/sources/", body(yunikorn.url), format="json").status_code == 403
    assert (
        viewer_client.patch(f"/api/sources/{source.pk}/", {"enabled": False}, format="json")
    ).status_code == 403
    assert viewer_client.post(f"/api/sources/{source.pk}/poll/").status_code == 403
    assert viewer_client.delete(f"/api/sources/{source.pk}/").status_code == 403


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("base_url", "ftp://yunikorn:9080", "http:// or https://"),
        ("base_url", "http://admin:pw@yunikorn:9080", "credentials"),
        ("base_url", "http://yunikorn:9080/?x=1", "query string"),
        ("base_url", "yunikorn:9080", "http:// or https://"),
        ("base_url", "http://", "must name a host"),
        ("poll_interval", 1, "greater than or equal to 5"),
        ("poll_interval", 10**9, "less than or equal to"),
        ("alert_after", -5, "greater than or equal to 0"),
        ("partition", "a/b", "partition name"),
        ("namespace", "Yunikorn_NS", "namespace"),
        ("token", "two words", "spaces"),
    ],
)
def test_bad_source_settings_are_refused_naming_the_field(
    staff_client: APIClient, field: str, value: object, message: str
) -> None:
    response = staff_client.post(
        "/api/sources/", body("http://yunikorn:9080", **{field: value}), format="json"
    )

    assert response.status_code == 400
    errors = response.json()
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not ClusterSource.objects.exists()


def test_one_source_per_partition(staff_client: APIClient) -> None:
    ClusterSource.objects.create(name="a", base_url="http://a:9080", partition="default")

    response = staff_client.post(
        "/api/sources/", body("http://b:9080", name="b", partition="default"), format="json"
    )

    assert response.status_code == 400
    assert "partition" in response.json()


def test_token_is_sent_as_bearer_and_never_reaches_logs_errors_or_alerts(
    yunikorn: FakeYuniKorn, caplog: pytest.LogCaptureFixture
) -> None:
    """Every request carries Authorization: Bearer <token>; a rejected token's failure,
    its alert and every log line (httpx included, at DEBUG) leave the token out."""
    caplog.set_level(logging.DEBUG)
    yunikorn.required_token = TOKEN
    source = ClusterSource.objects.create(
        name="acme-ml", base_url=yunikorn.url, token=TOKEN, alert_after=0
    )
    fetch = services.default_fetcher(sleep=SleepRecorder())

    ok = services.poll_source(source.pk, now=T0, fetch=fetch)
    assert ok.status == "stored"
    assert {s.headers.get("authorization") for s in yunikorn.seen} == {f"Bearer {TOKEN}"}

    yunikorn.required_token = "another-token"
    bad = services.poll_source(source.pk, now=T0, fetch=fetch, force=True)
    assert bad.status == "failed"
    assert "HTTP 401" in bad.error
    assert "token" in bad.error  # it says to check the token, without showing it
    source.refresh_from_db()
    # the failing poll's alert, and (alert_after 0) the failing events batch's: this
    # fake serves no /ws/v1/events/batch
    alerts = list(dm.Alert.objects.filter(kind=services.ALERT_SOURCE_FAILING))
    assert len(alerts) == 2
    for text in (bad.error, source.last_error, *(a.message for a in alerts), caplog.text):
        assert TOKEN not in text
    assert any("poll failed" in r.getMessage() for r in caplog.records)


def test_token_never_appears_in_pages_or_admin(admin_user_: Any, yunikorn: FakeYuniKorn) -> None:
    """The source-state include and the admin list/detail say "set", never the token."""
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url, token=TOKEN)
    html = Template("{% load sources %}{% source_states %}").render(Context({}))
    assert "acme-ml" in html
    assert TOKEN not in html
    assert ">set<" in html

    client = Client()
    client.force_login(admin_user_)
    listing = client.get("/admin/sources/clustersource/")
    detail = client.get(f"/admin/sources/clustersource/{source.pk}/change/")
    assert listing.status_code == 200
    assert detail.status_code == 200
    assert TOKEN not in listing.content.decode()
    assert TOKEN not in detail.content.decode()
    assert "set" in listing.content.decode()


def test_admin_edit_without_token_keeps_it(admin_user_: Any, yunikorn: FakeYuniKorn) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url, token=TOKEN)
    client = Client()
    client.force_login(admin_user_)
    form = {
        "name": "acme-ml",
        "base_url": yunikorn.url,
        "cluster": str(source.cluster_id),
        "partition": "default",
        "token": "",
        "verify_tls": "on",
        "poll_interval": "120",
        "enabled": "on",
        "alert_after": "300",
        "namespace": "yunikorn",
        "configmap_name": "yunikorn-configs",
    }

    response = client.post(f"/admin/sources/clustersource/{source.pk}/change/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    source.refresh_from_db()
    assert source.token == TOKEN
    assert source.poll_interval == 120
    client.post(f"/admin/sources/clustersource/{source.pk}/change/", {**form, "clear_token": "on"})
    source.refresh_from_db()
    assert source.token == ""


def test_poll_now_through_the_api(
    staff_client: APIClient,
    yunikorn: FakeYuniKorn,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """POST /api/sources/<id>/poll/ queues a forced poll once the request commits (eager
    Celery here): the source is polled even though it is disabled and not due."""
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url, enabled=False)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = staff_client.post(f"/api/sources/{source.pk}/poll/")

    assert response.status_code == 202
    # the poll, then the stored snapshot's engine-state warm-ups (one per worker process)
    assert len(callbacks) == 1 + settings.DASHBOARD_WARM_UP_TASKS
    assert "poll" in callbacks[0].__qualname__
    source.refresh_from_db()
    assert source.status == ClusterSource.Status.HEALTHY
    assert source.last_snapshot is not None
    # the four partition endpoints, then the scheduler's events and config (this server
    # has neither)
    assert len(yunikorn.seen) == 9
    assert [s.path for s in yunikorn.seen[-5:]] == [
        "/ws/v1/events/batch",
        "/ws/v1/config",
        # the scheduler's health, per-user usage and completed applications, after the poll
        "/ws/v1/scheduler/healthcheck",
        "/ws/v1/partition/default/usage/users",
        "/ws/v1/partition/default/applications/completed",
    ]
    assert "events fetch" in source.last_events_error


def test_source_snapshots_listing(staff_client: APIClient, yunikorn: FakeYuniKorn) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    outcome = services.poll_source(
        source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder())
    )

    response = staff_client.get(f"/api/sources/{source.pk}/snapshots/")

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [r["snapshot"] for r in rows] == [outcome.snapshot_id]
    assert len(rows[0]["fingerprint"]) == 64


def test_schema_documents_the_source_routes(staff_client: APIClient) -> None:
    response = staff_client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")

    assert response.status_code == 200
    paths = response.json()["paths"]
    assert "/api/sources/" in paths
    assert "/api/snapshots/{a}/compare/{b}/" in paths
    assert "/api/quota-changes/{id}/config/" in paths
    props = response.json()["components"]["schemas"]["ClusterSourceRequest"]["properties"]
    assert "token" in props
    assert "token" not in response.json()["components"]["schemas"]["ClusterSource"]["properties"]

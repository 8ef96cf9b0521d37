"""The same alert raised again while unread is grouped: one row with a count and the
time of the last one (a client retrying a refused upload leaves one entry, not one
per try); an acknowledged alert that recurs is a new unread entry."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from dashboard import models, services

pytestmark = pytest.mark.django_db

BAD = b"partitions:\n  - name: default\n    queues: [\n"


def _refuse(client: APIClient) -> None:
    upload = SimpleUploadedFile("bad.yaml", BAD)
    response = client.post("/api/configs/", {"file": upload}, format="multipart")
    assert response.status_code == 400


def test_repeated_refused_uploads_make_one_alert_with_a_count(
    staff_client: APIClient, viewer: Any
) -> None:
    for _ in range(5):
        _refuse(staff_client)
    alerts = models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_FAILED)
    assert alerts.count() == 1
    alert = alerts.get()
    assert alert.count == 5
    assert alert.last_seen_at >= alert.created_at

    body = staff_client.get("/api/alerts/").json()
    assert body["count"] == 1
    assert body["results"][0]["count"] == 5
    assert body["results"][0]["last_seen_at"]
    assert staff_client.get("/api/alerts/unread/").json() == {"unread": 1}

    page = Client()
    page.force_login(viewer)
    assert "\u00d75" in page.get("/alerts/").content.decode()  # the multiplication sign


def test_an_acknowledged_alert_that_recurs_is_a_new_entry(staff_client: APIClient) -> None:
    _refuse(staff_client)
    first = models.Alert.objects.get()
    staff_client.post(f"/api/alerts/{first.pk}/acknowledge/")
    _refuse(staff_client)
    assert models.Alert.objects.count() == 2
    assert models.Alert.objects.filter(acknowledged_at__isnull=True).get().count == 1


def test_different_alerts_are_not_grouped() -> None:
    t0 = services.utcnow()
    services.raise_alert(models.Alert.Kind.ENGINE, "one", now=t0)
    services.raise_alert(models.Alert.Kind.ENGINE, "two", now=t0)
    services.raise_alert(models.Alert.Kind.TIMER, "one", now=t0)
    again = services.raise_alert(models.Alert.Kind.ENGINE, "one", now=t0 + timedelta(hours=1))
    assert models.Alert.objects.count() == 3
    assert again.count == 2
    assert again.last_seen_at == t0 + timedelta(hours=1)
    assert again.created_at == t0

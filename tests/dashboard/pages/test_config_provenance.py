"""A config read from a state dump names who imported it and when, and when it was
captured (issue 38, point 7), not "imported <capture time> by —"."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dashboard import models, services

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 10, 1, 9, 30, tzinfo=UTC)


def test_a_config_from_a_state_dump_names_its_importer_and_capture(staff: Any) -> None:
    dump = (Path(settings.DASHBOARD_FIXTURES_DIR) / "rest" / "fullstatedump.json").read_bytes()
    snap = services.import_snapshot({"fullstatedump.json": dump}, user=staff, now=NOW)
    (version,) = models.ConfigVersion.objects.all()
    assert version.imported_by == staff
    client = Client()
    client.force_login(staff)
    html = client.get(reverse("config", args=[version.pk])).content.decode()
    said = html.split('data-testid="config-provenance">', 1)[1].split("</span>", 1)[0]
    assert f"#{snap.pk}</a>" in said
    assert f"captured {snap.captured_at:%Y-%m-%d %H:%M:%S} UTC" in said
    assert f"imported {NOW:%Y-%m-%d %H:%M:%S} UTC by {staff.get_username()}" in said

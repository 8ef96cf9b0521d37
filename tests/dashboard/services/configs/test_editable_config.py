"""The plan page's "edit the current config" (issue 38, point 8): the administrator's own
queues.yaml when the scheduler's config is that text, else the scheduler's dump without
its empty fields, which still reads as the same config."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.importers.config import parse_config
from dashboard.importers.config.answer import config_from_json

pytestmark = pytest.mark.django_db

FIXTURES = Path(settings.DASHBOARD_FIXTURES_DIR)


def _scheduler_config() -> models.ConfigVersion:
    """The acme-ml REST folder with its config.json: the config stored as the scheduler's."""
    rest = FIXTURES / "rest"
    files = {
        p.name: p.read_bytes()
        for p in rest.glob("*.json")
        if p.name not in ("fullstatedump.json", "events_batch.json")
    }
    snap = services.import_snapshot(files)
    version = snap.partition.configs.order_by("-number").first()
    assert version is not None
    assert version.parsed["source_format"] == "scheduler"
    return version


def _plain(q: Any) -> Any:
    """A queue's meaning (what the scheduler reads), without the text it came from."""
    if isinstance(q, dict):
        return {k: _plain(v) for k, v in q.items() if k not in ("raw", "child_template")}
    if isinstance(q, list):
        return [_plain(v) for v in q]
    return q


def _queues(text: str) -> Any:
    return _plain(parse_config(text).partition("default").root.to_dict())


def test_the_schedulers_dump_without_empty_fields_reads_as_the_same_config() -> None:
    version = _scheduler_config()
    text = services.editable_config_text(version)
    assert "resources: {}" not in text
    assert '"vcore"' not in text
    assert "{}" not in text
    assert _queues(text) == _queues(version.text)


def test_the_administrators_own_yaml_is_offered_when_the_checksums_match(staff: Any) -> None:
    """The administrator imported queues.yaml; the cluster's folder then brings the
    scheduler's dump of that same text (same checksum): editing offers the YAML as
    imported, comments and all."""
    own = (FIXTURES / "config" / "queues-nested-gpu.yaml").read_text()
    doc = json.loads((FIXTURES / "rest" / "config.json").read_text())
    assert (
        config_from_json(doc).checksum
        == services.import_config(own.encode(), cluster="acme-ml").versions[0].checksum
    )
    rest = FIXTURES / "rest"
    files = {
        p.name: p.read_bytes()
        for p in rest.glob("*.json")
        if p.name not in ("fullstatedump.json", "events_batch.json")
    }
    snap = services.import_snapshot(files, cluster="acme-ml")
    latest = services.latest_config(snap.partition)
    assert latest is not None
    assert services.editable_config_text(latest) == own
    client = Client()
    client.force_login(staff)
    page = client.get(
        reverse("plan"), {"cluster": "acme-ml", "partition": "default", "edit": "current"}
    ).content.decode()
    comment = next(line for line in own.splitlines() if line.lstrip().startswith("#"))
    assert comment.strip()[:30] in html.unescape(page)  # its comments come back with it

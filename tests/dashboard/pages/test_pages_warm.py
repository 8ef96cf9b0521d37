"""The what-if page warms its web process's engine state for the snapshot, in a thread."""

from __future__ import annotations

import threading
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import services
from dashboard.pages import warm
from dashboard.services.engine_state_cache import forget_engine_states


def _join_warm_threads() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith("warm-snapshot-"):
            thread.join(timeout=60)


@pytest.mark.django_db(transaction=True)
def test_the_whatif_page_warms_the_snapshot_state_once(settings: Any) -> None:
    settings.DASHBOARD_WARM_WEB = True
    forget_engine_states()
    snapshot = factories.SnapshotFactory.create()
    user = factories.UserFactory.create(is_staff=True)
    client = Client()
    client.force_login(user)
    try:
        assert client.get(reverse("whatif"), {"snapshot": snapshot.pk}).status_code == 200
        _join_warm_threads()
        assert services.is_engine_state_cached(snapshot)
        # built: the next page starts no thread
        assert warm.warm_in_background(snapshot) is False
    finally:
        forget_engine_states()


@pytest.mark.django_db
def test_warming_is_off_when_configured(settings: Any) -> None:
    settings.DASHBOARD_WARM_WEB = False
    forget_engine_states()
    snapshot = factories.SnapshotFactory.create()
    assert warm.warm_in_background(snapshot) is False
    assert not services.is_engine_state_cached(snapshot)


@pytest.mark.django_db
def test_the_whatif_page_has_the_workers_warm_the_snapshot_once(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poll of a source polled often stores its snapshot without warm-ups
    (SOURCES_WARM_UP_MIN_INTERVAL): the what-if page, when shown, asks the workers, once
    per snapshot and web process."""
    settings.DASHBOARD_WARM_WEB = False
    asked: list[int] = []
    monkeypatch.setattr(services, "warm_up_workers", asked.append)
    monkeypatch.setattr(warm, "_workers_asked", {})
    snapshot = factories.SnapshotFactory.create()
    client = Client()
    client.force_login(factories.UserFactory.create(is_staff=True))
    for _ in range(2):
        assert client.get(reverse("whatif"), {"snapshot": snapshot.pk}).status_code == 200
    assert asked == [snapshot.pk]

"""Races: concurrent transactions (threads with their own connections) never poll one
source twice; only one claim wins, and only that poll talks to the scheduler."""

from __future__ import annotations

import threading

import pytest
from races import in_threads
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard import models as dm
from dashboard.sources import services
from dashboard.sources.models import ClusterSource

pytestmark = pytest.mark.django_db(transaction=True)


def test_concurrent_claims_of_one_due_source_have_one_winner() -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url="http://yk:9080")
    barrier = threading.Barrier(4)

    def claim() -> object:
        barrier.wait()
        return services.claim_poll(source.pk, T0)

    results = in_threads(*[claim] * 4)

    assert not [r for r in results if isinstance(r, Exception)], results
    assert len([r for r in results if r is not None]) == 1


def test_concurrent_polls_fetch_and_store_once(yunikorn: FakeYuniKorn) -> None:
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    barrier = threading.Barrier(3)

    def poll() -> object:
        barrier.wait()
        fetch = services.default_fetcher(sleep=SleepRecorder())
        return services.poll_source(source.pk, now=T0, fetch=fetch).status

    results = in_threads(*[poll] * 3)

    assert sorted(str(r) for r in results) == ["not_due", "not_due", "stored"]
    assert yunikorn.requests_to("/ws/v1/partitions") == 1
    assert dm.ClusterSnapshot.objects.count() == 1

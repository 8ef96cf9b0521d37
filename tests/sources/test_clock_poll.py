"""A live source's polled events time the quota changes learned from the cluster: a
change whose start was unknown (a config imported with nothing to time it) starts at the
scheduler's QUEUE_MAX event once the poll reads it, and the scheduler's own quota
preemption read in the same poll settles it (no predicted run).

Served from a local HTTP server with the shared acme-ml answers and events (the
``served`` fixture of ``test_observed_poll``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sources_helpers import SHARED, T0, FakeYuniKorn, poll_live
from test_observed_poll import Ring, served

from dashboard import models as dm
from dashboard import services as platform
from dashboard.sources.models import ClusterSource

__all__ = ["served"]  # the fixture, used by name

pytestmark = pytest.mark.django_db

CONFIG = SHARED / "fixtures" / "yunikorn" / "config"
EVENT = datetime.fromtimestamp(1788256470.012887, tz=UTC)  # root.batch QUEUE_MAX, 09:54:30


def test_polled_events_time_a_change_whose_start_was_unknown(
    served: tuple[FakeYuniKorn, Ring],
) -> None:
    yunikorn, _ring = served
    for name, at in (("queues-nested-gpu-previous.yaml", 2), ("queues-nested-gpu.yaml", 1)):
        platform.import_config(
            (CONFIG / name).read_bytes(), filename=name, now=T0 - timedelta(days=at)
        )
    change = dm.QuotaChange.objects.get(queue_path="root.batch")
    assert (change.clock_source, change.changed_at) == ("config_import", T0 - timedelta(days=1))
    assert change.state == "waiting"
    source = ClusterSource.objects.create(name="acme-ml", base_url=yunikorn.url)
    assert poll_live(source, T0).status == "stored"
    change.refresh_from_db()
    assert (change.clock_source, change.clock_detail) == ("event", "QUEUE_MAX event 15245")
    assert change.changed_at == EVENT
    observed = dm.PreemptionRun.objects.get(trigger="observed", kind="quota")
    assert change.state == "done"
    assert f"observed run {observed.pk}" in change.reason
    assert platform.sweep_due_changes(now=T0).fired == ()
    # polled again: the events are read once, nothing moves
    poll_live(source, T0 + timedelta(minutes=1))
    assert dm.ObservedMaxChange.objects.count() == 1

"""Every queue's preemptable, stored with a snapshot at import and read by the pages."""

from __future__ import annotations

from typing import Any

import factories

from dashboard import models, services
from dashboard.services import engine_state_cache
from engine import queues


def _from_engine(snapshot: models.ClusterSnapshot) -> dict[str, Any]:
    engine_state_cache.forget_engine_states()
    snap = services.engine_state(snapshot).queues
    return {info.path: queues.preemptable(snap, info.path) for info in snap}


def test_import_stores_the_engines_preemptable_of_every_queue(
    snapshot: models.ClusterSnapshot,
) -> None:
    stored = models.SnapshotPreemptable.objects.get(snapshot=snapshot).values
    assert stored == _from_engine(snapshot)
    assert set(stored) == set(snapshot.queues.values_list("path", flat=True))
    assert any(v for v in stored.values())  # the small cluster has something preemptable


def test_pages_read_the_stored_values_without_the_engine_state(
    snapshot: models.ClusterSnapshot,
) -> None:
    engine_state_cache.forget_engine_states()
    values = services.queue_preemptable(snapshot)
    assert values == models.SnapshotPreemptable.objects.get(snapshot=snapshot).values
    assert not engine_state_cache.is_engine_state_cached(snapshot)  # nothing was built for it


def test_a_snapshot_stored_before_the_table_is_computed_on_demand(
    snapshot: models.ClusterSnapshot,
) -> None:
    expected = _from_engine(snapshot)
    models.SnapshotPreemptable.objects.filter(snapshot=snapshot).delete()
    engine_state_cache.forget_engine_states()
    assert services.queue_preemptable(snapshot) == expected


def test_the_values_go_with_their_snapshot(snapshot: models.ClusterSnapshot) -> None:
    other = factories.SnapshotFactory.create(partition_name="other")
    snapshot.delete()
    assert list(models.SnapshotPreemptable.objects.values_list("snapshot", flat=True)) == [other.pk]

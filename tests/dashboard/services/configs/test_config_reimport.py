"""Re-importing a config into a partition with history costs a fixed number of queries,
whatever the number of queues and of queues whose max or delay changed (no per-queue
look-ups of the partition's config, snapshot and changes, no per-change writes)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from queue_configs import T0, config_yaml, scenario

from dashboard import models, services
from dashboard.services.quota.queue_settings import queue_settings, settings_for_paths

pytestmark = pytest.mark.django_db


def _with_history(n: int) -> None:
    services.import_config(config_yaml(n, 0).encode(), now=T0)
    services.import_snapshot(
        {"scenario.json": json.dumps(scenario(n)).encode()}, now=T0 + timedelta(minutes=1)
    )
    services.import_config(config_yaml(n, 1).encode(), now=T0 + timedelta(minutes=2))


def _reimport_queries(n: int, changed_every: int) -> tuple[int, int, int]:
    """The re-import's reads, its writes (INSERT and UPDATE statements) and its changes."""
    for model in (models.Alert, models.QuotaChange, models.ConfigVersion):
        model.objects.all().delete()
    models.ClusterSnapshot.objects.all().delete()
    models.Partition.objects.all().delete()
    _with_history(n)
    text = config_yaml(n, 2, extra=5).encode()
    with CaptureQueriesContext(connection) as captured:
        result = services.import_config(text, now=T0 + timedelta(minutes=3))
    writes = sum(1 for q in captured.captured_queries if q["sql"].startswith(("INSERT", "UPDATE")))
    return len(captured.captured_queries) - writes, writes, len(result.changes)


def test_reimport_queries_do_not_grow_with_queues_or_changes() -> None:
    """Four times the queues and the changes (every tenth leaf's max, some with a timer
    started): the same number of queries (on SQLite, whose statements take at most 999
    values, the writes come in more batches)."""
    small_reads, small_writes, small_changes = _reimport_queries(120, 10)
    big_reads, big_writes, big_changes = _reimport_queries(480, 10)
    print(
        f"[figures] re-import queries: 120 queues {small_reads + small_writes}, "
        f"480 queues {big_reads + big_writes}"
    )
    assert big_changes >= 4 * small_changes - 4, (small_changes, big_changes)
    assert small_reads == big_reads
    if connection.vendor == "postgresql":
        assert small_writes == big_writes


def test_settings_for_paths_match_queue_settings_one_by_one(staff: Any) -> None:
    _with_history(60)
    partition = models.Partition.objects.get(name="default")
    # a change through the API's path as well, and a queue only the snapshot knows
    paths = [q.path for q in models.ConfigVersion.objects.latest("number").queues.all()]
    services.schedule_quota_change(
        partition, paths[-1], new_max={"vcore": 1000}, user=staff, now=T0 + timedelta(minutes=4)
    )
    wanted = [*paths, "root.nope", "root.p0000.q00000"]
    bulk = settings_for_paths(partition, wanted)
    assert bulk == {path: queue_settings(partition, path) for path in wanted}

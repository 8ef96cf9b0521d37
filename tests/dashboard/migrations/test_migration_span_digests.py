"""Migration 0015 recomputes the open allocation spans' digests: the first poll after the
upgrade still recognises every unchanged allocation (and the way back restores the old
digests)."""

from __future__ import annotations

import importlib
from typing import Any

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, at_migration, migrate, store_rest_snapshot

from dashboard import models, services
from dashboard.services.snapshots.spans import ALLOCATION_FIELDS, engine_allocation_digest
from engine.scenario import parse_cluster

BEFORE = [("dashboard", "0014_read_caches")]
AFTER = [("dashboard", "0015_allocation_span_digests")]
#: A span's content columns, in the order its digest takes them (the pod, added by
#: migration 0030, is kept outside the digest: a pod uid's name never changes).
CONTENT = tuple(f for f in ALLOCATION_FIELDS if f != "pod")
spans_0011 = importlib.import_module("dashboard.migrations.0011_snapshot_spans")


def scenario() -> dict[str, Any]:
    allocations: list[dict[str, Any]] = [
        {
            "key": f"alloc-{i}-é",
            "app": f"app-{i % 3}",
            "queue": "root.a" if i % 2 else "root.b",
            "node": f"n{i % 2}",
            "resources": {"vcore": 100 * (i + 1), "memory": 2**30 + i, "nvidia.com/gpu": i % 2},
            "priority": i - 2,
            "originator": i == 1,
            "created": 1788000000 + i / 3,
            "required_node": i == 2,
            "preempted": i == 3,
        }
        for i in range(6)
    ]
    allocations[0].update(placeholder=True, task_group="driver")
    allocations[4].update(placeholder_used=True, task_group="x" * 300)  # stored cut to 255
    return {
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}, {"name": "b"}]},
        "nodes": [{"id": f"n{i}", "capacity": {"vcore": 10**6}} for i in range(2)],
        "allocations": allocations,
        "now": T0.timestamp(),
    }


def store(minutes: int) -> models.ClusterSnapshot:
    return store_rest_snapshot(scenario(), minutes)


def open_digests(apps: Any) -> dict[str, tuple[str, tuple[object, ...]]]:
    Span = apps.get_model("dashboard", "AllocationSpan")
    return {
        s.key: (s.digest, tuple(getattr(s, f) for f in CONTENT))
        for s in Span.objects.filter(gone_in__isnull=True)
    }


def test_the_first_poll_after_the_migration_writes_no_span(transactional_db: None) -> None:
    first = store(0)
    assert models.AllocationSpan.objects.count() == 6
    new_digests = {k: d for k, (d, _) in open_digests(django_apps()).items()}
    cluster = parse_cluster(scenario())
    for key, (digest, content) in open_digests(django_apps()).items():
        # what the import compares: the digest of the engine's allocation with its extras
        a = next(a for a in cluster.allocations if a.key == key)
        assert digest == engine_allocation_digest(a, content[11:])  # type: ignore[arg-type]

    # back at 0014: the digests the code before wrote (0011's definition of them)
    for ex in at_migration(BEFORE):
        old = open_digests(ex.loader.project_state(BEFORE).apps)
        assert {k: d for k, (d, _) in old.items()} == {
            k: spans_0011.allocation_digest(content) for k, (_, content) in old.items()
        }
        assert all(old[k][0] != new_digests[k] for k in old)
        # forward again (a database upgraded with these spans open)
        after = migrate(MigrationExecutor(ex.connection), AFTER)
        assert {k: d for k, (d, _) in open_digests(after).items()} == new_digests
        migrate(MigrationExecutor(ex.connection), ex.loader.graph.leaf_nodes())
        # the next poll of the same allocations extends every span: nothing written
        second = store(1)
        assert second.pk > first.pk
        assert models.AllocationSpan.objects.count() == 6
        assert not models.AllocationSpan.objects.filter(gone_in__isnull=False).exists()
        assert services.snapshot_allocations(second).count() == 6


def django_apps() -> Any:
    from django.apps import apps

    return apps

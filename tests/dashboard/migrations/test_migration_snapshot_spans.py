"""The migration to spans keeps every stored snapshot's nodes, applications and allocations."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from django.db.migrations.executor import MigrationExecutor
from django.db.models import Q
from migration_support import T0, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0007_observed_runs")]
AFTER = [("dashboard", "0011_snapshot_spans")]
FIELDS = (
    "key",
    "app",
    "queue",
    "node",
    "resources",
    "priority",
    "originator",
    "allow_preemption",
    "created",
    "required_node",
    "preempted",
)


NODE_FIELDS = ("node_id", "capacity", "allocated", "schedulable")
APP_FIELDS = ("app_id", "queue", "state", "used", "pending", "details")


executor = executor_fixture(BEFORE)


def allocation(key: str, rng: random.Random) -> dict[str, Any]:
    return {
        "key": key,
        "app": f"app-{rng.randrange(3)}",
        "queue": rng.choice(("root.a", "root.b")),
        "node": rng.choice(("n1", "n2")),
        "resources": {"vcore": 100 * rng.randrange(1, 5)},
        "priority": rng.randrange(3),
        "originator": rng.random() < 0.3,
        "allow_preemption": rng.random() < 0.7,
        "created": 1788000000.0 + rng.randrange(1000) / 4,
        "required_node": rng.random() < 0.2,
        "preempted": rng.random() < 0.1,
    }


def histories() -> dict[str, list[list[dict[str, Any]]]]:
    """Per partition, the allocations of each of its snapshots (with churn)."""
    rng = random.Random(3)
    out: dict[str, list[list[dict[str, Any]]]] = {}
    for name in ("east", "west"):
        current = {f"{name}-{i}": allocation(f"{name}-{i}", rng) for i in range(12)}
        polls = [list(current.values())]
        polls.append(rng.sample(list(current.values()), len(current)))  # unchanged
        for k in sorted(current)[:3]:
            del current[k]
        k = sorted(current)[0]
        current[k] = {**current[k], "node": "n3", "preempted": True}
        current[f"{name}-new"] = allocation(f"{name}-new", rng)
        polls.append(list(current.values()))
        polls.append(list(polls[0]))  # all back as in the first
        polls.append([])
        out[name] = polls
    return out


def nodes(allocations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Node rows (id order): n3 only while something runs on it, allocated sums."""
    out = []
    for n in ("n1", "n2", "n3"):
        on = [a for a in allocations if a["node"] == n]
        if n == "n3" and not on:
            continue
        allocated = {"vcore": sum(a["resources"]["vcore"] for a in on)} if on else {}
        out.append(
            {
                "node_id": n,
                "capacity": {"vcore": 10**6},
                "allocated": allocated,
                "schedulable": True,
            }
        )
    return out


def applications(allocations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    apps = sorted({a["app"] for a in allocations})
    return [
        {
            "app_id": app,
            "queue": "root.a",
            "state": "Running",
            "used": {"vcore": sum(a["resources"]["vcore"] for a in allocations if a["app"] == app)},
            "pending": {},
            "details": {"id": app, "tags": {"team": "x"}},
        }
        for app in apps
    ]


def document(allocations: list[dict[str, Any]], at: datetime) -> dict[str, Any]:
    return {
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}, {"name": "b"}]},
        "nodes": [
            {"id": n["node_id"], "capacity": n["capacity"], "schedulable": n["schedulable"]}
            for n in reversed(nodes(allocations))  # stored in the scheduler's order
        ],
        "allocations": [dict(a) for a in allocations],
        "now": at.timestamp(),
    }


def test_snapshots_keep_their_allocations_through_the_migration_and_back(
    executor: MigrationExecutor,
) -> None:
    old = models_at(executor, BEFORE)
    Partition = old.get_model("dashboard", "Partition")
    Snapshot = old.get_model("dashboard", "ClusterSnapshot")
    Row = old.get_model("dashboard", "SnapshotAllocation")
    Node = old.get_model("dashboard", "SnapshotNode")
    App = old.get_model("dashboard", "SnapshotApplication")
    stored: dict[int, list[dict[str, Any]]] = {}
    docs: dict[int, dict[str, Any]] = {}
    parts = {name: Partition.objects.create(name=name) for name in ("east", "west")}
    runs = histories()
    for i in range(len(runs["east"])):  # the partitions' snapshots interleave
        for name in ("east", "west"):
            at = T0 + timedelta(minutes=i)
            doc = document(runs[name][i], at)
            snap = Snapshot.objects.create(
                partition=parts[name],
                source_kind="rest",
                captured_at=at,
                imported_at=at,
                scenario=doc,
                checksum=f"{snap_count(Snapshot):064d}",
            )
            Row.objects.bulk_create(Row(snapshot=snap, **a) for a in runs[name][i])
            Node.objects.bulk_create(Node(snapshot=snap, **n) for n in nodes(runs[name][i]))
            App.objects.bulk_create(App(snapshot=snap, **a) for a in applications(runs[name][i]))
            stored[snap.pk] = sorted(runs[name][i], key=lambda a: a["key"])
            docs[snap.pk] = doc
    rows_before = Row.objects.count()
    counts_before = (Node.objects.count(), App.objects.count())

    new = migrate(executor, AFTER)
    Snapshot = new.get_model("dashboard", "ClusterSnapshot")
    Span = new.get_model("dashboard", "AllocationSpan")
    for pk, want in stored.items():
        snap = Snapshot.objects.get(pk=pk)
        held = (
            Span.objects.filter(partition_id=snap.partition_id, first_seen__lte=pk)
            .filter(Q(gone_in__isnull=True) | Q(gone_in__gt=pk))
            .order_by("key")
        )
        assert list(held.values(*FIELDS)) == want
        assert not held.exclude(placeholder=False, placeholder_used=False, task_group="").exists()
        assert snap.scenario == {
            k: v for k, v in docs[pk].items() if k not in ("nodes", "allocations")
        }
        for kind, key, want_rows in (
            ("NodeSpan", "node_id", nodes(stored[pk])),
            ("ApplicationSpan", "app_id", applications(stored[pk])),
        ):
            spans = (
                new.get_model("dashboard", kind)
                .objects.filter(partition_id=snap.partition_id, first_seen__lte=pk)
                .filter(Q(gone_in__isnull=True) | Q(gone_in__gt=pk))
                .order_by(key)
            )
            assert list(spans.values(*want_rows[0])) == want_rows if want_rows else not spans
    # shared, not copied: 12 + 2 + 4 spans per partition instead of 46 rows
    assert Span.objects.count() == 2 * 18 < rows_before == 2 * 46

    # the services read the migrated snapshots back whole (allocations sorted by key)
    migrate(executor, executor.loader.graph.leaf_nodes())
    from dashboard import models, services

    for pk, want in stored.items():
        snap = models.ClusterSnapshot.objects.get(pk=pk)
        assert services.stored_scenario(snap) == {
            **docs[pk],
            "nodes": sorted(docs[pk]["nodes"], key=lambda n: n["id"]),
            "allocations": want,
        }
        assert list(
            services.snapshot_nodes(snap).order_by("node_id").values(*NODE_FIELDS)
        ) == nodes(want)
        assert list(
            services.snapshot_applications(snap).order_by("app_id").values(*APP_FIELDS)
        ) == applications(want)

    # and back: one row per snapshot and allocation again, and the allocations in the JSON
    old = migrate(executor, BEFORE)
    Snapshot = old.get_model("dashboard", "ClusterSnapshot")
    Row = old.get_model("dashboard", "SnapshotAllocation")
    Node = old.get_model("dashboard", "SnapshotNode")
    App = old.get_model("dashboard", "SnapshotApplication")
    assert Row.objects.count() == rows_before
    assert (Node.objects.count(), App.objects.count()) == counts_before
    for pk, want in stored.items():
        rows = Row.objects.filter(snapshot_id=pk).order_by("key")
        assert list(rows.values(*FIELDS)) == want
        node_rows = Node.objects.filter(snapshot_id=pk).order_by("node_id")
        assert list(node_rows.values(*NODE_FIELDS)) == nodes(want)
        app_rows = App.objects.filter(snapshot_id=pk).order_by("app_id")
        assert list(app_rows.values(*APP_FIELDS)) == applications(want)
        assert Snapshot.objects.get(pk=pk).scenario == {
            **docs[pk],
            "nodes": sorted(docs[pk]["nodes"], key=lambda n: n["id"]),
            "allocations": want,
        }


def snap_count(model: Any) -> int:
    return int(model.objects.count())

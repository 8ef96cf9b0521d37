"""Nodes, applications and allocations stored once per span of snapshots: exact read-back.

A sequence of polls with churn (replaced, changed, vanished and returning
allocations, an unchanged poll, a poll replacing everything) is stored; each
snapshot's rebuilt scenario, engine cluster, node, application and allocation rows
equal what was stored, storage grows with what changed only, deleting snapshots
keeps the others exact, and comparing any two snapshots gives the exact difference.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dashboard import models, services
from dashboard.services.engine_state_cache import forget_engine_states
from dashboard.sources.compare import compare_snapshots
from engine.scenario import allocation_to_dict, cluster_to_dict, parse_cluster

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
NODES = ("n1", "n2", "n3")


def allocation(key: str, rng: random.Random) -> dict[str, Any]:
    return {
        "key": key,
        "app": f"app-{rng.randrange(5)}",
        "queue": rng.choice(("root.a", "root.b")),
        "node": rng.choice(NODES),
        "resources": {"vcore": 100 * rng.randrange(1, 5), "memory": 2**20 * rng.randrange(1, 9)},
        "priority": rng.randrange(3),
        "originator": rng.random() < 0.2,
        "allow_preemption": rng.random() < 0.8,
        "created": 1788000000.0 + rng.randrange(10_000) / 8,
        "required_node": rng.random() < 0.1,
        "preempted": False,
    }


def scenario(allocations: Sequence[dict[str, Any]], at: datetime) -> dict[str, Any]:
    return {
        "now": at.timestamp(),
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}, {"name": "b"}]},
        "nodes": [{"id": n, "capacity": {"vcore": 10**9, "memory": 2**50}} for n in NODES],
        "allocations": [dict(a) for a in allocations],
    }


def polls(count: int = 40) -> list[list[dict[str, Any]]]:
    """Successive allocation lists of one cluster, with every kind of churn."""
    rng = random.Random(7)
    current = {f"k{i:03d}": allocation(f"k{i:03d}", rng) for i in range(count)}
    out = [list(current.values())]
    # 1: unchanged (in another order, as the scheduler lists them)
    out.append(rng.sample(list(current.values()), len(current)))
    # 2: a quarter replaced, two changed (node, resources), one preempted
    gone = sorted(current)[:10]
    for k in gone:
        del current[k]
    for i in range(10):
        current[f"new{i:02d}"] = allocation(f"new{i:02d}", rng)
    keys = sorted(current)
    current[keys[0]] = {
        **current[keys[0]],
        "node": "n3" if current[keys[0]]["node"] != "n3" else "n1",
    }
    current[keys[1]] = {**current[keys[1]], "resources": {"vcore": 12345}}
    current[keys[2]] = {**current[keys[2]], "preempted": True}
    out.append(list(current.values()))
    # 3: one that left in poll 2 comes back as it was
    first = out[0][0]
    current[first["key"]] = dict(first)
    out.append(list(current.values()))
    # 4: everything replaced
    current = {f"r{i:03d}": allocation(f"r{i:03d}", rng) for i in range(count)}
    out.append(list(current.values()))
    # 5: empty cluster, 6: back to poll 4
    out.append([])
    out.append(list(current.values()))
    return out


def applications(allocations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One application per app of the allocations, using what its allocations use."""
    apps: dict[str, dict[str, Any]] = {}
    for a in allocations:
        app = apps.setdefault(
            a["app"],
            {"app_id": a["app"], "queue": a["queue"], "state": "Running", "used": {}},
        )
        app["queue"] = min(app["queue"], a["queue"])  # whatever order they come in
        for t, q in a["resources"].items():
            app["used"][t] = app["used"].get(t, 0) + q
        app["allocations"] = app.get("allocations", 0) + 1
    return [apps[k] for k in sorted(apps)]


def store(allocations: Sequence[dict[str, Any]], i: int, partition: str = "default") -> Any:
    at = T0 + timedelta(minutes=i)
    return services.store_snapshot(
        partition_name=partition,
        source_kind=models.ClusterSnapshot.Source.REST,
        captured_at=at,
        scenario=scenario(allocations, at),
        applications=applications(allocations),
        now=at,
    )


def spans() -> int:
    return sum(
        m.objects.count() for m in (models.AllocationSpan, models.NodeSpan, models.ApplicationSpan)
    )


def expected_allocations(allocations: Sequence[dict[str, Any]]) -> list[dict[str, object]]:
    """The allocations as the engine reads them, sorted by key."""
    cluster = parse_cluster(scenario(allocations, T0))
    return sorted((allocation_to_dict(a) for a in cluster.allocations), key=lambda a: str(a["key"]))


def expected_document(allocations: Sequence[dict[str, Any]], i: int) -> dict[str, object]:
    doc = scenario(allocations, T0 + timedelta(minutes=i))
    out = cluster_to_dict(parse_cluster(doc))
    out["allocations"] = expected_allocations(allocations)
    out["now"] = doc["now"]
    return out


def assert_exact(
    snapshot: models.ClusterSnapshot, allocations: Sequence[dict[str, Any]], i: int
) -> None:
    snapshot.refresh_from_db()
    want = expected_document(allocations, i)
    assert services.stored_scenario(snapshot) == want
    assert services.scenario_checksum(services.stored_scenario(snapshot)) == snapshot.checksum
    forget_engine_states()
    cluster = services.cluster_from_snapshot(snapshot)
    assert [allocation_to_dict(a) for a in cluster.allocations] == expected_allocations(allocations)
    rows = list(
        services.snapshot_allocations(snapshot)
        .order_by("key")
        .values("key", "node", "resources", "preempted")
    )
    assert rows == [
        {k: a[k] for k in ("key", "node", "resources", "preempted")}
        for a in expected_allocations(allocations)
    ]
    nodes = list(
        services.snapshot_nodes(snapshot)
        .order_by("node_id")
        .values_list("node_id", "capacity", "allocated", "schedulable")
    )
    allocated: dict[str, dict[str, int]] = {n: {} for n in NODES}
    for a in allocations:
        for t, q in a["resources"].items():
            allocated[a["node"]][t] = allocated[a["node"]].get(t, 0) + q
    assert nodes == [
        (n["id"], n["capacity"], allocated[n["id"]], True)
        for n in scenario(allocations, T0)["nodes"]
    ]
    apps = list(
        services.snapshot_applications(snapshot)
        .order_by("app_id")
        .values_list("app_id", "queue", "state", "used", "details")
    )
    assert apps == [
        (x["app_id"], x["queue"], "Running", x["used"], x) for x in applications(allocations)
    ]
    # the JSON column no longer holds a copy of the nodes and allocations
    assert "allocations" not in snapshot.scenario
    assert "nodes" not in snapshot.scenario


def test_every_snapshot_reads_back_exactly_what_was_stored() -> None:
    history = polls()
    stored = [store(allocs, i) for i, allocs in enumerate(history)]
    for i, (snap, allocs) in enumerate(zip(stored, history, strict=True)):
        assert_exact(snap, allocs, i)


def test_storage_grows_with_churn_not_with_polls() -> None:
    history = polls()
    store(history[0], 0)
    assert models.AllocationSpan.objects.count() == 40
    first = spans()
    store(history[1], 1)  # unchanged: nothing written
    assert models.AllocationSpan.objects.count() == 40
    assert spans() == first
    store(history[2], 2)  # 10 new, 3 changed
    assert models.AllocationSpan.objects.count() == 53
    assert models.AllocationSpan.objects.filter(gone_in__isnull=True).count() == 40
    store(history[3], 3)  # one back
    assert models.AllocationSpan.objects.count() == 54
    now = spans()
    for i in range(4, 9):
        store(history[3], i)  # five unchanged polls
    assert spans() == now


def test_partitions_keep_their_own_spans() -> None:
    history = polls()
    a0 = store(history[0], 0, "east")
    b0 = store(history[0], 0, "west")
    a1 = store(history[2], 1, "east")
    b1 = store(history[0], 1, "west")
    assert_exact(a0, history[0], 0)
    assert_exact(b0, history[0], 0)
    assert_exact(a1, history[2], 1)
    assert_exact(b1, history[0], 1)
    assert models.AllocationSpan.objects.filter(partition__name="west").count() == 40


def test_deleting_snapshots_keeps_the_others_exact_and_drops_unused_spans() -> None:
    history = polls()
    stored = [store(allocs, i) for i, allocs in enumerate(history)]
    before = spans()
    doomed = [0, 2, 3]  # the first, and the only ones holding poll 2's changed allocations
    models.ClusterSnapshot.objects.filter(pk__in=[stored[i].pk for i in doomed]).delete()
    dropped = services.drop_unused_spans()
    assert dropped > 0
    assert spans() == before - dropped
    for i, (snap, allocs) in enumerate(zip(stored, history, strict=True)):
        if i not in doomed:
            assert_exact(snap, allocs, i)
    # every span left is held by a snapshot
    held: set[tuple[str, int]] = set()
    for snap in models.ClusterSnapshot.objects.all():
        for name, qs in (
            ("a", services.snapshot_allocations(snap)),
            ("n", services.snapshot_nodes(snap)),
            ("p", services.snapshot_applications(snap)),
        ):
            held.update((name, pk) for pk in qs.values_list("pk", flat=True))
    assert held == {
        (name, pk)
        for name, model in (
            ("a", models.AllocationSpan),
            ("n", models.NodeSpan),
            ("p", models.ApplicationSpan),
        )
        for pk in model.objects.values_list("pk", flat=True)
    }
    assert services.drop_unused_spans() == 0
    # the next poll follows on from the newest snapshot as before
    nxt = store(history[3], len(history))
    assert_exact(nxt, history[3], len(history))


def test_retention_keeps_later_snapshots_exact() -> None:
    from dashboard.sources import retention
    from dashboard.sources.models import ClusterSource, SourceSnapshot

    source = ClusterSource.objects.create(name="acme", base_url="http://yk:9080")
    history = polls()
    stored = []
    for i, allocs in enumerate(history):
        snap = store(allocs, i)
        SourceSnapshot.objects.create(
            source=source, snapshot=snap, fingerprint=f"{i:064d}", fetched_at=snap.captured_at
        )
        stored.append(snap)
    # all in one old hour: only the earliest and the newest stay
    plan = retention.prune_snapshots(T0 + timedelta(days=3))
    assert plan.deleted == len(history) - 2
    assert plan.spans_deleted > 0
    assert_exact(stored[0], history[0], 0)
    assert_exact(stored[-1], history[-1], len(history) - 1)
    assert models.AllocationSpan.objects.count() == 80  # poll 0's and poll 6's
    assert models.NodeSpan.objects.count() == 6


def test_comparing_two_snapshots_is_exact() -> None:
    history = polls()
    stored = [store(allocs, i) for i, allocs in enumerate(history)]
    for a, b in ((0, 1), (0, 2), (1, 3), (2, 4), (0, 6), (5, 6)):
        got = compare_snapshots(stored[a], stored[b])
        before = {str(x["key"]): x for x in expected_allocations(history[a])}
        after = {str(x["key"]): x for x in expected_allocations(history[b])}
        assert [x["key"] for x in got["allocations"]["appeared"]] == sorted(
            set(after) - set(before)
        )
        assert [x["key"] for x in got["allocations"]["left"]] == sorted(set(before) - set(after))
        changed = sorted(
            k
            for k in set(before) & set(after)
            if any(
                before[k][f] != after[k][f]
                for f in ("node", "resources", "preempted", "priority", "queue")
            )
        )
        assert [x["key"] for x in got["allocations"]["changed"]] == changed
    assert compare_snapshots(stored[0], stored[1])["summary"]["identical"]


def test_allocation_extras_are_stored_with_the_span() -> None:
    at = T0
    doc = scenario(polls()[0][:2], at)
    doc["allocations"][0].update(placeholder=True, placeholder_used=True, task_group="tg-1")
    snap = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.REST,
        captured_at=at,
        scenario=doc,
        now=at,
    )
    rows = list(
        services.snapshot_allocations(snap)
        .order_by("key")
        .values_list("placeholder", "placeholder_used", "task_group")
    )
    assert rows == [(True, True, "tg-1"), (False, False, "")]
    # the placeholder's task group changing is a change: a new span
    doc["allocations"][0]["task_group"] = "tg-2"
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.REST,
        captured_at=at,
        scenario=doc,
        now=at,
    )
    assert models.AllocationSpan.objects.count() == 3


def test_deleting_a_snapshot_in_the_admin_drops_what_only_it_held() -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    history = polls()
    first, second = store(history[0], 0), store(history[4], 1)  # nothing shared
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-for-tests")
    client = Client()
    client.force_login(admin)
    url = reverse("admin:dashboard_clustersnapshot_delete", args=[first.pk])
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not models.ClusterSnapshot.objects.filter(pk=first.pk).exists()
    assert services.drop_unused_spans() == 0
    assert models.AllocationSpan.objects.count() == 40
    assert_exact(second, history[4], 1)


def test_a_poll_reads_the_open_spans_without_joining_or_sorting() -> None:
    """The open spans a poll compares with are read from their own table, unordered: the
    spans' default order would join the partition and cluster to each of a big cluster's
    rows and sort them all, for a dict."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first, second = polls(10)[:2]
    store(first, 0)
    with CaptureQueriesContext(connection) as queries:
        store(second, 1)
    reads = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT") and '"digest"' in q["sql"]
    ]
    assert len(reads) == 3  # allocations, nodes, applications
    for sql in reads:
        assert "JOIN" not in sql, sql
        assert "ORDER BY" not in sql, sql

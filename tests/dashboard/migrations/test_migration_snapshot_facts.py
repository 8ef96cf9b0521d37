"""The migration adding YuniKorn's facts to the snapshot rows fills snapshots stored before it.

From the stored scenario where it holds the facts, otherwise with what a plain
scenario means (allocated = usage + preempting, Active, reported capacity =
capacity, no placeholders); the rows' other columns are kept.
"""

from __future__ import annotations

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, default_partition, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0007_observed_runs")]
AFTER = [("dashboard", "0009_snapshot_facts")]


executor = executor_fixture(BEFORE)


def test_existing_snapshots_get_their_facts(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    partition = default_partition(old)
    Snapshot = old.get_model("dashboard", "ClusterSnapshot")
    plain = Snapshot.objects.create(
        partition=partition,
        source_kind="scenario",
        captured_at=T0,
        imported_at=T0,
        scenario={"queues": {"name": "root", "children": [{"name": "a"}]}, "nodes": []},
    )
    with_facts = Snapshot.objects.create(
        partition=partition,
        source_kind="rest",
        captured_at=T0,
        imported_at=T0,
        scenario={
            "queues": {
                "name": "root",
                "allocated": {"vcore": 2000},
                "running_apps": 1,
                "children": [
                    {
                        "name": "old",
                        "allocated": {"vcore": 2000},
                        "status": "Draining",
                        "dynamic": True,
                        "max_applications": 3,
                        "running_apps": 1,
                    }
                ],
            },
            "nodes": [
                {
                    "id": "n1",
                    "capacity": {"vcore": 6000},
                    "reported_capacity": {"vcore": 8000},
                    "occupied": {"vcore": 2000},
                    "foreign_pods": [{"key": "f1", "pod": "kube-system/x", "resources": {}}],
                }
            ],
            "allocations": [
                {"key": "ph-1", "placeholder": True, "task_group": "exec"},
                {"key": "real-1"},
            ],
        },
    )
    Queue = old.get_model("dashboard", "SnapshotQueue")
    Queue.objects.create(
        snapshot=plain,
        path="root.a",
        name="a",
        usage={"vcore": 1000},
        preempting={"vcore": 500, "memory": 8},
        max={"vcore": 4000},
    )
    Queue.objects.create(snapshot=with_facts, path="root.old", name="old", usage={"vcore": 2000})
    Node = old.get_model("dashboard", "SnapshotNode")
    Node.objects.create(snapshot=plain, node_id="p1", capacity={"vcore": 4000})
    Node.objects.create(snapshot=with_facts, node_id="n1", capacity={"vcore": 6000})
    Alloc = old.get_model("dashboard", "SnapshotAllocation")
    for key in ("ph-1", "real-1"):
        Alloc.objects.create(
            snapshot=with_facts, key=key, queue="root.old", node="n1", resources={"vcore": 1000}
        )

    new = migrate(executor, AFTER)
    Queue = new.get_model("dashboard", "SnapshotQueue")
    a = Queue.objects.get(snapshot_id=plain.pk)
    assert (a.allocated, a.usage, a.preempting, a.max) == (
        {"vcore": 1500, "memory": 8},
        {"vcore": 1000},
        {"vcore": 500, "memory": 8},
        {"vcore": 4000},
    )
    assert (a.status, a.dynamic, a.max_applications, a.running_apps) == (
        "Active",
        False,
        None,
        None,
    )
    drained = Queue.objects.get(snapshot_id=with_facts.pk)
    assert (drained.allocated, drained.status, drained.dynamic) == (
        {"vcore": 2000},
        "Draining",
        True,
    )
    assert (drained.max_applications, drained.running_apps) == (3, 1)
    Node = new.get_model("dashboard", "SnapshotNode")
    p1 = Node.objects.get(node_id="p1")
    assert (p1.reported_capacity, p1.occupied, p1.foreign_pods) == ({"vcore": 4000}, {}, [])
    n1 = Node.objects.get(node_id="n1")
    assert (n1.capacity, n1.reported_capacity, n1.occupied) == (
        {"vcore": 6000},
        {"vcore": 8000},
        {"vcore": 2000},
    )
    assert [p["pod"] for p in n1.foreign_pods] == ["kube-system/x"]
    Alloc = new.get_model("dashboard", "SnapshotAllocation")
    flags = {
        a.key: (a.placeholder, a.placeholder_used, a.task_group)
        for a in Alloc.objects.filter(snapshot_id=with_facts.pk)
    }
    assert flags == {"ph-1": (True, False, "exec"), "real-1": (False, False, "")}

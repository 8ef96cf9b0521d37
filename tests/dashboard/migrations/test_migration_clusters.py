"""The migration adding clusters moves every stored partition, with its data, into one
cluster, named after the clusterId the stored snapshots agree on, else ``default``."""

from __future__ import annotations

from typing import Any

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, default_partition, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0007_observed_runs"), ("sources", "0003_events_position")]
AFTER = [("dashboard", "0008_cluster"), ("sources", "0004_source_cluster")]


executor = executor_fixture(BEFORE)


def _migrate(executor: MigrationExecutor) -> Any:
    return migrate(executor, AFTER)


def _snapshot(apps: Any, partition: Any, scenario: dict[str, object]) -> Any:
    return apps.get_model("dashboard", "ClusterSnapshot").objects.create(
        partition=partition,
        source_kind="rest",
        captured_at=T0,
        imported_at=T0,
        scenario=scenario,
        checksum="c" * 64,
    )


def test_partitions_join_the_cluster_their_snapshots_name(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    Partition = old.get_model("dashboard", "Partition")
    default = Partition.objects.create(name="default", quota_preemption_enabled=True, miss=0.5)
    gpu = Partition.objects.create(name="gpu")
    snap = _snapshot(old, default, {"queues": {"name": "root"}, "cluster_id": "mycluster"})
    _snapshot(old, gpu, {"queues": {"name": "root"}, "cluster_id": "mycluster"})
    version = old.get_model("dashboard", "ConfigVersion").objects.create(
        partition=default, number=3, text="partitions: []", checksum="x", imported_at=T0
    )
    run = old.get_model("dashboard", "PreemptionRun").objects.create(
        partition=default, snapshot=snap, kind="whatif_preempt", queued_at=T0, queue="root.a"
    )
    change = old.get_model("dashboard", "QuotaChange").objects.create(
        partition=gpu, queue_path="root.b", state="waiting", changed_at=T0, new_max={"vcore": 1}
    )
    alert = old.get_model("dashboard", "Alert").objects.create(
        kind="quota", message="m", partition=gpu, created_at=T0, last_seen_at=T0
    )
    source = old.get_model("sources", "ClusterSource").objects.create(
        name="acme", base_url="http://yk:9080", partition="default"
    )

    new = _migrate(executor)
    Cluster = new.get_model("dashboard", "Cluster")
    (cluster,) = Cluster.objects.all()
    assert (cluster.name, cluster.cluster_id) == ("mycluster", "mycluster")
    Partition = new.get_model("dashboard", "Partition")
    rows = {p.name: p for p in Partition.objects.all()}
    assert {n: p.cluster_id for n, p in rows.items()} == {"default": cluster.pk, "gpu": cluster.pk}
    assert (rows["default"].quota_preemption_enabled, rows["default"].miss) == (True, 0.5)
    assert new.get_model("dashboard", "ConfigVersion").objects.get(pk=version.pk).number == 3
    migrated_run = new.get_model("dashboard", "PreemptionRun").objects.get(pk=run.pk)
    assert (migrated_run.partition_id, migrated_run.snapshot_id, migrated_run.queue) == (
        default.pk,
        snap.pk,
        "root.a",
    )
    migrated_change = new.get_model("dashboard", "QuotaChange").objects.get(pk=change.pk)
    assert (migrated_change.partition_id, migrated_change.new_max) == (gpu.pk, {"vcore": 1})
    assert new.get_model("dashboard", "Alert").objects.get(pk=alert.pk).partition_id == gpu.pk
    migrated_source = new.get_model("sources", "ClusterSource").objects.get(pk=source.pk)
    assert (migrated_source.cluster_id, migrated_source.partition) == (cluster.pk, "default")


def test_disagreeing_snapshots_give_the_default_cluster(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    partition = default_partition(old)
    _snapshot(old, partition, {"cluster_id": "east"})
    _snapshot(old, partition, {"cluster_id": "west"})

    new = _migrate(executor)
    (cluster,) = new.get_model("dashboard", "Cluster").objects.all()
    assert (cluster.name, cluster.cluster_id) == ("default", "")
    assert new.get_model("dashboard", "Partition").objects.get().cluster_id == cluster.pk


def test_snapshots_naming_no_cluster_give_the_default_cluster(
    executor: MigrationExecutor,
) -> None:
    old = models_at(executor, BEFORE)
    partition = default_partition(old)
    _snapshot(old, partition, {"queues": {}})

    new = _migrate(executor)
    assert [c.name for c in new.get_model("dashboard", "Cluster").objects.all()] == ["default"]


def test_an_empty_database_gets_no_cluster(executor: MigrationExecutor) -> None:
    new = _migrate(executor)
    assert new.get_model("dashboard", "Cluster").objects.count() == 0

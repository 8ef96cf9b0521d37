"""The migration adding observed runs keeps the runs stored before it as they were."""

from __future__ import annotations

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, default_partition, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0006_import_job")]
AFTER = [("dashboard", "0007_observed_runs")]


executor = executor_fixture(BEFORE)


def test_existing_runs_keep_their_data(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    partition = default_partition(old)
    Run = old.get_model("dashboard", "PreemptionRun")
    timer = Run.objects.create(
        partition=partition,
        kind="quota_enforcement",
        trigger="timer",
        status="done",
        queue="root.batch",
        request={"queue": "root.batch", "new_max": {"vcore": 8000}},
        result={"status": "enforced"},
        outcome="enforced",
        claimed={"vcore": 2000},
        target={"vcore": 2000},
        idempotency_key="change-7",
        queued_at=T0,
    )
    old.get_model("dashboard", "RunVictim").objects.create(
        run=timer, position=0, allocation_key="alloc-1", app="spark", resources={"vcore": 2000}
    )
    whatif = Run.objects.create(
        partition=partition, kind="whatif_preempt", trigger="manual", queued_at=T0
    )

    new = migrate(executor, AFTER)
    Run = new.get_model("dashboard", "PreemptionRun")
    row = Run.objects.get(pk=timer.pk)
    assert (row.kind, row.trigger, row.status, row.outcome, row.queue) == (
        "quota_enforcement",
        "timer",
        "done",
        "enforced",
        "root.batch",
    )
    assert row.request == {"queue": "root.batch", "new_max": {"vcore": 8000}}
    assert row.result == {"status": "enforced"}
    assert (row.claimed, row.target, row.idempotency_key) == (
        {"vcore": 2000},
        {"vcore": 2000},
        "change-7",
    )
    assert row.queued_at == T0
    assert row.predicted_id is None
    assert list(row.victims.values_list("allocation_key", "app", "resources")) == [
        ("alloc-1", "spark", {"vcore": 2000})
    ]
    assert Run.objects.get(pk=whatif.pk).kind == "whatif_preempt"

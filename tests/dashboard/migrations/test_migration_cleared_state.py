"""The migration adding a quota change's ``cleared`` state moves the changes the sweep
cleared before it (done when applied, fired when planned, their reason starting "timer
cleared at the scheduler's check") to ``cleared``, and back on the way down; other done
or fired changes stay as they were."""

from __future__ import annotations

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0033_merge_scheduler_recovery")]
AFTER = [("dashboard", "0034_quotalife_cleared_state")]
CLEARED = "timer cleared at the scheduler's check at 2026-09-01 10:01:00 UTC: within"

executor = executor_fixture(BEFORE)


def test_changes_cleared_before_the_state_existed_become_cleared(
    executor: MigrationExecutor,
) -> None:
    old = models_at(executor, BEFORE)
    cluster = old.get_model("dashboard", "Cluster").objects.create(name="default")
    partition = old.get_model("dashboard", "Partition").objects.create(
        cluster=cluster, name="default"
    )
    Change = old.get_model("dashboard", "QuotaChange")
    common = {"partition": partition, "new_max": {"vcore": 8000}, "changed_at": T0}
    applied = Change.objects.create(
        queue_path="root.a", state="done", reason=CLEARED, applied_at=T0, **common
    )
    planned = Change.objects.create(queue_path="root.b", state="fired", reason=CLEARED, **common)
    enforced = Change.objects.create(
        queue_path="root.c", state="done", reason="enforced in the cluster", applied_at=T0, **common
    )
    ids = [applied.pk, planned.pk, enforced.pk]

    new = migrate(executor, AFTER)
    states = dict(new.get_model("dashboard", "QuotaChange").objects.values_list("pk", "state"))
    assert [states[i] for i in ids] == ["cleared", "cleared", "done"]

    back = migrate(executor, BEFORE)
    states = dict(back.get_model("dashboard", "QuotaChange").objects.values_list("pk", "state"))
    assert [states[i] for i in ids] == ["done", "fired", "done"]

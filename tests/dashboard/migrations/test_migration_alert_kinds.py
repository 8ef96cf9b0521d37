"""The migration splitting the quota alert kind moves the scheduler's observed
enforcements to their own kind and leaves the dashboard's timer alerts as they were."""

from __future__ import annotations

from datetime import UTC, datetime

from django.db.migrations.executor import MigrationExecutor
from migration_support import executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0012_snapshot_preemptable")]
AFTER = [("dashboard", "0013_alert_kind_words")]


executor = executor_fixture(BEFORE)


def test_observed_enforcement_alerts_get_their_own_kind(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    t0 = datetime(2026, 10, 14, 14, 0, tzinfo=UTC)
    Alert = old.get_model("dashboard", "Alert")
    observed = Alert.objects.create(
        kind="quota",
        message="root.batch: observed: the scheduler enforced change 3 at 2026-10-14 (observed "
        "run 5); the dashboard's own timer does not fire",
        created_at=t0,
        last_seen_at=t0,
    )
    predicted = Alert.objects.create(
        kind="quota",
        message="root.batch: quota change 4 timer fired in the dashboard (predicted, nothing "
        "was preempted in the cluster): target claimed in full, 1 predicted victim (a-1)",
        created_at=t0,
        last_seen_at=t0,
    )

    Alert = migrate(executor, AFTER).get_model("dashboard", "Alert")
    assert Alert.objects.get(pk=observed.pk).kind == "quota_observed"
    assert Alert.objects.get(pk=predicted.pk).kind == "quota"

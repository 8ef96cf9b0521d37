"""The migration adding the scheduler's clock classifies the changes stored before it:
those a config import learned are applied (their start unknown: the import), usage rises
say they were counted from the import, and changes made in the dashboard stay planned."""

from __future__ import annotations

from datetime import timedelta

from django.db.migrations.executor import MigrationExecutor
from migration_support import T0, default_partition, executor_fixture, migrate, models_at

BEFORE = [("dashboard", "0007_observed_runs")]
AFTER = [("dashboard", "0010_scheduler_clock")]


executor = executor_fixture(BEFORE)


def test_existing_changes_are_classified(executor: MigrationExecutor) -> None:
    old = models_at(executor, BEFORE)
    partition = default_partition(old)
    version = old.get_model("dashboard", "ConfigVersion").objects.create(
        partition=partition, number=2, text="", imported_at=T0
    )
    user = old.get_model("auth", "User").objects.create(username="admin", is_staff=True)
    Change = old.get_model("dashboard", "QuotaChange")
    common = {"partition": partition, "new_max": {"vcore": 8000}, "state": "waiting"}
    learned = Change.objects.create(
        queue_path="root.a", changed_at=T0, config_version=version, created_by=user, **common
    )
    planned = Change.objects.create(
        queue_path="root.b",
        changed_at=T0 + timedelta(minutes=1),
        config_version=version,
        created_by=user,
        **common,
    )
    rose = Change.objects.create(queue_path="root.c", changed_at=T0, cause="usage_rose", **common)

    new = migrate(executor, AFTER)
    Change = new.get_model("dashboard", "QuotaChange")
    got = {
        c.pk: (c.clock_source, c.applied_at, c.learned)
        for c in Change.objects.filter(pk__in=[learned.pk, planned.pk, rose.pk])
    }
    assert got == {
        learned.pk: ("config_import", T0, True),
        planned.pk: ("dashboard", None, False),
        rose.pk: ("import", T0, False),
    }

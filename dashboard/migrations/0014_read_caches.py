"""Read caches: an index of allocation spans by queue, and data versions kept by triggers.

- ``alloc_span_queue``: one queue's allocations (``queue = path`` or ``LIKE 'path.%'``)
  without a scan of every span of the partition.
- ``dashboard_dataversion``: one row per table below whose ``n`` changes in the same
  transaction as any write to the table (see :mod:`dashboard.dataversion`). On
  PostgreSQL a deferred constraint trigger sets it at commit, once per transaction
  and table, from a sequence (a number is never handed out twice, even after a
  rollback); taking the row's lock only at commit, a writer never waits for it while
  holding other locks. A TRUNCATE counts too. On SQLite (one writer at a time) plain
  row triggers add one.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

#: The tables whose versions the cached reads depend on (frozen here: a later change
#: to dashboard.dataversion.TABLES needs a migration of its own).
TABLES = (
    "dashboard_alert",
    "dashboard_quotachange",
    "dashboard_preemptionrun",
    "dashboard_runvictim",
    "dashboard_partition",
    "dashboard_cluster",
    "auth_user",
)

PG_FUNCTION = """
CREATE SEQUENCE dashboard_dataversion_seq;
CREATE FUNCTION dashboard_bump_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('dashboard.bumped_' || TG_TABLE_NAME, true) = '1' THEN
        RETURN NULL;
    END IF;
    INSERT INTO dashboard_dataversion (name, n)
        VALUES (TG_TABLE_NAME, nextval('dashboard_dataversion_seq'))
        ON CONFLICT (name) DO UPDATE SET n = EXCLUDED.n;
    PERFORM set_config('dashboard.bumped_' || TG_TABLE_NAME, '1', true);
    RETURN NULL;
END $$;
"""

PG_TRIGGERS = """
CREATE CONSTRAINT TRIGGER dashboard_version AFTER INSERT OR UPDATE OR DELETE ON {table}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION dashboard_bump_version();
CREATE TRIGGER dashboard_version_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_bump_version();
"""

SQLITE_TRIGGER = """
CREATE TRIGGER dashboard_version_{table}_{op} AFTER {op} ON {table}
BEGIN
    INSERT INTO dashboard_dataversion (name, n) VALUES ('{table}', 1)
        ON CONFLICT (name) DO UPDATE SET n = n + 1;
END;
"""


def create_triggers(apps: Any, schema_editor: Any) -> None:
    run = schema_editor.execute
    if schema_editor.connection.vendor == "postgresql":
        run(PG_FUNCTION)
        for table in TABLES:
            run(PG_TRIGGERS.format(table=table))
    elif schema_editor.connection.vendor == "sqlite":
        for table in TABLES:
            for op in ("INSERT", "UPDATE", "DELETE"):
                run(SQLITE_TRIGGER.format(table=table, op=op))
    else:  # pragma: no cover - the project runs on PostgreSQL and SQLite only
        raise NotImplementedError(schema_editor.connection.vendor)


def drop_triggers(apps: Any, schema_editor: Any) -> None:
    run = schema_editor.execute
    if schema_editor.connection.vendor == "postgresql":
        for table in TABLES:
            run(f"DROP TRIGGER IF EXISTS dashboard_version ON {table}")
            run(f"DROP TRIGGER IF EXISTS dashboard_version_truncate ON {table}")
        run("DROP FUNCTION IF EXISTS dashboard_bump_version()")
        run("DROP SEQUENCE IF EXISTS dashboard_dataversion_seq")
    elif schema_editor.connection.vendor == "sqlite":
        for table in TABLES:
            for op in ("INSERT", "UPDATE", "DELETE"):
                run(f"DROP TRIGGER IF EXISTS dashboard_version_{table}_{op}")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0013_alert_kind_words"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="allocationspan",
            index=models.Index(
                fields=["partition", "queue"],
                name="alloc_span_queue",
                opclasses=["int8_ops", "varchar_pattern_ops"],
            ),
        ),
        migrations.RunSQL(
            "CREATE TABLE dashboard_dataversion (name varchar(100) PRIMARY KEY, n bigint NOT NULL)",
            "DROP TABLE dashboard_dataversion",
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]

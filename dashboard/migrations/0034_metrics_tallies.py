"""Tallies of the run history for ``/metrics``, kept by PostgreSQL triggers.

``/metrics`` used to count every finished preemption, victim and linked observed run at
each scrape (seconds at 50,000 linked runs). These tables hold those counts per
partition, queue and kind (``preemptiontally``), per partition and kind
(``agreementtally``, from one row per linked observed run in ``observedagreement``) and
per kind and latency bucket (``runlatencytally``). Statement-level triggers on runs and
victims (inserts, updates, deletes, bulk or not, from any process) add each change to
them in the same transaction, taking the tally rows in key order; a TRUNCATE of either
table recounts them. ``dashboard_recount_metrics()`` rebuilds them from the history (run
here once, and by ``manage.py recount_metrics``).

The SQL is frozen here: a change to what is counted (the preemption kinds, the
agreement rule, the latency buckets of dashboard.metrics.counts) needs a migration
of its own. On SQLite nothing is created: the collector counts the history there.
"""

from typing import Any

from django.db import migrations, models

#: dashboard.metrics.counts.LATENCY_BUCKETS when this was written.
BOUNDS = "{0.05,0.1,0.25,0.5,1.0,2.5,5.0,10.0,30.0,60.0,120.0,300.0}"


def counted(r: str) -> str:
    """A finished preemption run (dashboard.metrics.counts.PREEMPTION_KINDS)."""
    return f"{r}kind IN ('quota_enforcement', 'quota', 'preempt') AND {r}status = 'done'"


def latency(r: str) -> str:
    return f"EXTRACT(EPOCH FROM ({r}finished_at - {r}queued_at))"


def timed(r: str) -> str:
    """A finished run with a latency (not an observed one)."""
    return f"{r}finished_at IS NOT NULL AND NOT ({r}\"trigger\" = 'observed')"


def victims_of(r: str) -> str:
    return f"(SELECT count(*) FROM dashboard_runvictim v WHERE v.run_id = {r}id)"


def add_preemptions(changes: str) -> str:
    """Add the (partition, queue, kind, runs, victims) rows of *changes* (a SELECT)."""
    return f"""
    INSERT INTO dashboard_preemptiontally AS t (partition_id, queue, kind, runs, victims)
    SELECT p, q, k, sum(n), sum(v) FROM ({changes}) AS c (p, q, k, n, v)
    GROUP BY p, q, k HAVING sum(n) <> 0 OR sum(v) <> 0 ORDER BY p, q, k
    ON CONFLICT (partition_id, queue, kind) DO UPDATE
        SET runs = t.runs + EXCLUDED.runs, victims = t.victims + EXCLUDED.victims;
    DELETE FROM dashboard_preemptiontally WHERE runs = 0 AND victims = 0;
"""


def add_latencies(changes: str) -> str:
    """Add the (kind, latency seconds, +1 or -1) rows of *changes* (a SELECT)."""
    return f"""
    INSERT INTO dashboard_runlatencytally AS t (kind, bucket, runs, seconds)
    SELECT k, dashboard_latency_bucket(s), sum(n), sum(n * s) FROM ({changes}) AS c (k, s, n)
    GROUP BY 1, 2 HAVING sum(n) <> 0 OR sum(n * s) <> 0 ORDER BY 1, 2
    ON CONFLICT (kind, bucket) DO UPDATE
        SET runs = t.runs + EXCLUDED.runs, seconds = t.seconds + EXCLUDED.seconds;
    DELETE FROM dashboard_runlatencytally WHERE runs = 0 AND seconds = 0;
"""


def refresh_agreement(ids: str) -> str:
    return f"PERFORM dashboard_refresh_agreement(ARRAY({ids}));"


BUCKET_FUNCTION = f"""
CREATE FUNCTION dashboard_latency_bucket(seconds numeric) RETURNS smallint
LANGUAGE sql IMMUTABLE AS $$
    SELECT count(*)::smallint FROM unnest('{BOUNDS}'::numeric[]) AS b WHERE b < seconds
$$;
"""

# One observed run agrees when it took the victims its prediction took (a round's
# victims counted only when taken for the observed run's ask): the run page's rule
# (dashboard.services.runs.observed.compare).
AGREEMENT_FUNCTION = """
CREATE FUNCTION dashboard_refresh_agreement(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF ids IS NULL OR cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    -- one transaction at a time judges the runs of a partition: a second one waits
    -- here until the first commits, and its next statements see what that one wrote
    -- (a run's victims and its prediction's, written by two transactions at once)
    PERFORM pg_advisory_xact_lock(1835365490, p::int) FROM (
        SELECT partition_id AS p FROM dashboard_preemptionrun
        WHERE id = ANY(ids) AND "trigger" = 'observed' AND predicted_id IS NOT NULL
        UNION
        SELECT partition_id FROM dashboard_observedagreement WHERE run_id = ANY(ids)
        ORDER BY 1
    ) AS partitions;
    WITH gone AS (
        DELETE FROM dashboard_observedagreement a WHERE a.run_id = ANY(ids)
        RETURNING a.partition_id, a.kind, a.agreed
    )
    INSERT INTO dashboard_agreementtally AS t (partition_id, kind, linked, agreed)
    SELECT partition_id, kind, -count(*), -count(*) FILTER (WHERE agreed) FROM gone
    GROUP BY partition_id, kind ORDER BY partition_id, kind
    ON CONFLICT (partition_id, kind) DO UPDATE
        SET linked = t.linked + EXCLUDED.linked, agreed = t.agreed + EXCLUDED.agreed;
    WITH linked AS (
        SELECT r.id, r.predicted_id, r.partition_id, r.kind,
               COALESCE(r.request ->> 'ask', '') AS ask, p.kind AS predicted_kind
        FROM dashboard_preemptionrun r JOIN dashboard_preemptionrun p ON p.id = r.predicted_id
        WHERE r.id = ANY(ids) AND r."trigger" = 'observed'
    ),
    sides AS (
        SELECT l.id AS run_id, v.allocation_key
        FROM linked l JOIN dashboard_runvictim v ON v.run_id = l.id
        UNION ALL
        SELECT l.id, v.allocation_key
        FROM linked l JOIN dashboard_runvictim v ON v.run_id = l.predicted_id
        WHERE NOT (l.ask <> '' AND l.predicted_kind = 'round') OR v.ask = l.ask
    ),
    differing AS (
        -- a run's victims are unique per key: a key on both sides is counted twice
        SELECT DISTINCT run_id FROM sides GROUP BY run_id, allocation_key HAVING count(*) <> 2
    ),
    fresh AS (
        INSERT INTO dashboard_observedagreement (run_id, partition_id, kind, agreed)
        SELECT l.id, l.partition_id, l.kind, d.run_id IS NULL
        FROM linked l LEFT JOIN differing d ON d.run_id = l.id
        RETURNING partition_id, kind, agreed
    )
    INSERT INTO dashboard_agreementtally AS t (partition_id, kind, linked, agreed)
    SELECT partition_id, kind, count(*), count(*) FILTER (WHERE agreed) FROM fresh
    GROUP BY partition_id, kind ORDER BY partition_id, kind
    ON CONFLICT (partition_id, kind) DO UPDATE
        SET linked = t.linked + EXCLUDED.linked, agreed = t.agreed + EXCLUDED.agreed;
    DELETE FROM dashboard_agreementtally WHERE linked = 0 AND agreed = 0;
END $$;
"""

RECOUNT_FUNCTION = f"""
CREATE FUNCTION dashboard_recount_metrics() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM dashboard_preemptiontally;
    DELETE FROM dashboard_observedagreement;
    DELETE FROM dashboard_agreementtally;
    DELETE FROM dashboard_runlatencytally;
    {
    add_preemptions(f'''
        SELECT r.partition_id, r.queue::text, r.kind::text, 1::bigint, COALESCE(v.n, 0)
        FROM dashboard_preemptionrun r
        LEFT JOIN (SELECT run_id, count(*) AS n FROM dashboard_runvictim GROUP BY run_id) v
            ON v.run_id = r.id
        WHERE {counted("r.")}''')
}
    {
    refresh_agreement('''
        SELECT id FROM dashboard_preemptionrun
        WHERE "trigger" = 'observed' AND predicted_id IS NOT NULL''')
}
    {
    add_latencies(f'''
        SELECT r.kind::text, {latency("r.")}, 1 FROM dashboard_preemptionrun r
        WHERE {timed("r.")}''')
}
END $$;
"""

RUNS_INSERTED = (
    add_preemptions(f"""
        SELECT n.partition_id, n.queue::text, n.kind::text, 1::bigint, {victims_of("n.")}
        FROM new_rows n WHERE {counted("n.")}""")
    + add_latencies(f"""
        SELECT n.kind::text, {latency("n.")}, 1 FROM new_rows n WHERE {timed("n.")}""")
    + refresh_agreement("""
        SELECT n.id FROM new_rows n
        WHERE n."trigger" = 'observed' AND n.predicted_id IS NOT NULL
        UNION
        SELECT r.id FROM dashboard_preemptionrun r
        WHERE r.predicted_id IN (SELECT id FROM new_rows)""")
)

RUNS_UPDATED = (
    add_preemptions(f"""
        WITH pairs AS (
            SELECT n.id, o.partition_id AS op, o.queue AS oq, o.kind AS ok,
                   ({counted("o.")}) AS oc, n.partition_id AS np, n.queue AS nq,
                   n.kind AS nk, ({counted("n.")}) AS nc
            FROM old_rows o JOIN new_rows n ON n.id = o.id
        ),
        moved AS (
            SELECT pairs.*, {victims_of("pairs.")} AS nv FROM pairs
            WHERE (oc OR nc) AND (oc, op, oq, ok) IS DISTINCT FROM (nc, np, nq, nk)
        )
        SELECT op, oq::text, ok::text, -1::bigint, -nv FROM moved WHERE oc
        UNION ALL
        SELECT np, nq::text, nk::text, 1::bigint, nv FROM moved WHERE nc""")
    + add_latencies(f"""
        WITH pairs AS (
            SELECT o.kind AS ok, {latency("o.")} AS os, ({timed("o.")}) AS ot,
                   n.kind AS nk, {latency("n.")} AS ns, ({timed("n.")}) AS nt
            FROM old_rows o JOIN new_rows n ON n.id = o.id
        ),
        moved AS (
            SELECT * FROM pairs WHERE (ot OR nt) AND (ot, ok, os) IS DISTINCT FROM (nt, nk, ns)
        )
        SELECT ok::text, os, -1 FROM moved WHERE ot
        UNION ALL
        SELECT nk::text, ns, 1 FROM moved WHERE nt""")
    + refresh_agreement("""
        SELECT n.id FROM old_rows o JOIN new_rows n ON n.id = o.id
        WHERE (o."trigger" = 'observed' OR n."trigger" = 'observed')
          AND (o."trigger", o.predicted_id, o.partition_id, o.kind, o.request ->> 'ask')
              IS DISTINCT FROM
              (n."trigger", n.predicted_id, n.partition_id, n.kind, n.request ->> 'ask')
        UNION
        SELECT r.id FROM dashboard_preemptionrun r
        WHERE r.predicted_id IN (
            SELECT n.id FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE o.kind IS DISTINCT FROM n.kind
        )""")
)

RUNS_DELETED = (
    add_preemptions(f"""
        SELECT o.partition_id, o.queue::text, o.kind::text, -1::bigint, -{victims_of("o.")}
        FROM old_rows o WHERE {counted("o.")}""")
    + add_latencies(f"""
        SELECT o.kind::text, {latency("o.")}, -1 FROM old_rows o WHERE {timed("o.")}""")
    + refresh_agreement("""
        SELECT o.id FROM old_rows o WHERE o."trigger" = 'observed'
        UNION
        SELECT r.id FROM dashboard_preemptionrun r
        WHERE r.predicted_id IN (SELECT id FROM old_rows)""")
)

# A victim counts under its run's partition, queue and kind while the run exists (a run
# deleted before its victims took their count with it).
VICTIMS_INSERTED = add_preemptions(f"""
        SELECT r.partition_id, r.queue::text, r.kind::text, 0::bigint, count(*)
        FROM new_rows v JOIN dashboard_preemptionrun r ON r.id = v.run_id
        WHERE {counted("r.")} GROUP BY 1, 2, 3""") + refresh_agreement("""
        SELECT run_id FROM new_rows
        UNION
        SELECT r.id FROM dashboard_preemptionrun r
        WHERE r.predicted_id IN (SELECT run_id FROM new_rows)""")

VICTIMS_UPDATED = add_preemptions(f"""
        WITH moved AS (
            SELECT o.run_id AS old_run, n.run_id AS new_run
            FROM old_rows o JOIN new_rows n ON n.id = o.id WHERE o.run_id <> n.run_id
        )
        SELECT r.partition_id, r.queue::text, r.kind::text, 0::bigint, -count(*)
        FROM moved m JOIN dashboard_preemptionrun r ON r.id = m.old_run
        WHERE {counted("r.")} GROUP BY 1, 2, 3
        UNION ALL
        SELECT r.partition_id, r.queue::text, r.kind::text, 0::bigint, count(*)
        FROM moved m JOIN dashboard_preemptionrun r ON r.id = m.new_run
        WHERE {counted("r.")} GROUP BY 1, 2, 3""") + refresh_agreement("""
        WITH touched AS (
            SELECT o.run_id AS old_run, n.run_id AS new_run
            FROM old_rows o JOIN new_rows n ON n.id = o.id
            WHERE (o.run_id, o.allocation_key, o.ask)
                  IS DISTINCT FROM (n.run_id, n.allocation_key, n.ask)
        ),
        runs AS (SELECT old_run AS id FROM touched UNION SELECT new_run FROM touched)
        SELECT id FROM runs
        UNION
        SELECT r.id FROM dashboard_preemptionrun r WHERE r.predicted_id IN (SELECT id FROM runs)""")

VICTIMS_DELETED = add_preemptions(f"""
        SELECT r.partition_id, r.queue::text, r.kind::text, 0::bigint, -count(*)
        FROM old_rows v JOIN dashboard_preemptionrun r ON r.id = v.run_id
        WHERE {counted("r.")} GROUP BY 1, 2, 3""") + refresh_agreement("""
        SELECT run_id FROM old_rows
        UNION
        SELECT r.id FROM dashboard_preemptionrun r
        WHERE r.predicted_id IN (SELECT run_id FROM old_rows)""")


def trigger_function(name: str, inserted: str, updated: str, deleted: str) -> str:
    return f"""
CREATE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {inserted}
    ELSIF TG_OP = 'UPDATE' THEN
        {updated}
    ELSE
        {deleted}
    END IF;
    RETURN NULL;
END $$;
"""


TRUNCATED_FUNCTION = """
CREATE FUNCTION dashboard_tally_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM dashboard_recount_metrics();
    RETURN NULL;
END $$;
"""

TRIGGERS = """
CREATE TRIGGER dashboard_tally_insert AFTER INSERT ON {table}
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER dashboard_tally_update AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER dashboard_tally_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER dashboard_tally_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION dashboard_tally_truncated();
"""

TABLES = {
    "dashboard_preemptionrun": "dashboard_tally_runs",
    "dashboard_runvictim": "dashboard_tally_victims",
}

FUNCTIONS = (
    BUCKET_FUNCTION,
    AGREEMENT_FUNCTION,
    RECOUNT_FUNCTION,
    trigger_function("dashboard_tally_runs", RUNS_INSERTED, RUNS_UPDATED, RUNS_DELETED),
    trigger_function("dashboard_tally_victims", VICTIMS_INSERTED, VICTIMS_UPDATED, VICTIMS_DELETED),
    TRUNCATED_FUNCTION,
)


def create_triggers(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return  # SQLite: the collector counts the history itself
    run = schema_editor.execute
    # rows that reach zero are deleted at once: a partial index finds them
    run(
        "CREATE INDEX preemption_tally_zero ON dashboard_preemptiontally (id) "
        "WHERE runs = 0 AND victims = 0"
    )
    run(
        "CREATE INDEX agreement_tally_zero ON dashboard_agreementtally (id) "
        "WHERE linked = 0 AND agreed = 0"
    )
    run(
        "CREATE INDEX run_latency_tally_zero ON dashboard_runlatencytally (id) "
        "WHERE runs = 0 AND seconds = 0"
    )
    for function in FUNCTIONS:
        run(function)
    for table, function in TABLES.items():
        run(TRIGGERS.format(table=table, function=function))
    # fresh statistics first: the recount's joins planned without them took minutes
    run("ANALYZE dashboard_preemptionrun, dashboard_runvictim")
    run("SELECT dashboard_recount_metrics()")


def drop_triggers(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    run = schema_editor.execute
    for table in TABLES:
        for op in ("insert", "update", "delete", "truncate"):
            run(f"DROP TRIGGER IF EXISTS dashboard_tally_{op} ON {table}")
    for function in (
        "dashboard_tally_truncated()",
        "dashboard_tally_victims()",
        "dashboard_tally_runs()",
        "dashboard_recount_metrics()",
        "dashboard_refresh_agreement(bigint[])",
        "dashboard_latency_bucket(numeric)",
    ):
        run(f"DROP FUNCTION IF EXISTS {function}")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0033_merge_scheduler_recovery"),
    ]

    operations = [
        migrations.CreateModel(
            name="ObservedAgreement",
            fields=[
                ("run_id", models.BigIntegerField(primary_key=True, serialize=False)),
                ("partition_id", models.BigIntegerField()),
                ("kind", models.CharField(max_length=20)),
                ("agreed", models.BooleanField()),
            ],
        ),
        migrations.CreateModel(
            name="AgreementTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("partition_id", models.BigIntegerField()),
                ("kind", models.CharField(max_length=20)),
                ("linked", models.BigIntegerField(default=0)),
                ("agreed", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("partition_id", "kind"), name="agreement_tally_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="PreemptionTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("partition_id", models.BigIntegerField()),
                ("queue", models.CharField(max_length=1000)),
                ("kind", models.CharField(max_length=20)),
                ("runs", models.BigIntegerField(default=0)),
                ("victims", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("partition_id", "queue", "kind"), name="preemption_tally_key"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="RunLatencyTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("kind", models.CharField(max_length=20)),
                ("bucket", models.SmallIntegerField()),
                ("runs", models.BigIntegerField(default=0)),
                ("seconds", models.DecimalField(decimal_places=6, default=0, max_digits=1000)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("kind", "bucket"), name="run_latency_tally_key")
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]

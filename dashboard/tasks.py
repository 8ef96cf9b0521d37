"""Celery envelopes around services: ids in, nothing returned (the rows are the result).

Services send these by name (``dashboard.execute_run``) once their transaction
commits, so they never import this module; the options every envelope shares
are in :mod:`dashboard.envelope`.

Every process that sets Django up imports this module (``DashboardConfig.ready``
registers the tasks), so it imports the services only when a task runs: a web
process, beat or a ``manage.py`` job does not pay for them (and the importers and
the engine behind them) at start. A worker imports them once before its pool
starts (``dashboard.celery``: ``worker_init``).
"""

from __future__ import annotations

from dashboard.envelope import envelope


@envelope("dashboard.execute_run", time_limit=600, max_retries=5, retry_backoff=True)
def execute_run(run_id: int) -> None:
    """Evaluate one stored preemption run (what-if preempt / quota, round, enforcement)."""
    from dashboard import services

    services.execute_run(run_id)


@envelope("dashboard.sweep_quota_changes", time_limit=300)
def sweep_quota_changes() -> None:
    """Fire due quota changes (deadlines are in the database) and recover stale runs."""
    from dashboard import services

    services.sweep_due_changes()


@envelope("dashboard.run_import_job", time_limit=3600)
def run_import_job(job_id: int) -> None:
    """Import an upload stored as an import job (large configs)."""
    from dashboard import services

    services.run_import_job(job_id)


@envelope("dashboard.warm_snapshot", time_limit=600)
def warm_snapshot(snapshot_id: int) -> None:
    """Build a new snapshot's engine state in this worker process before anyone asks
    (not when a newer snapshot of its partition is stored meanwhile)."""
    from dashboard import services

    services.warm_engine_state(snapshot_id, newest_only=True)


# alert delivery's envelopes live beside their service; importing them registers them
from dashboard.alerting import tasks as _alerting_tasks  # noqa: E402, F401

"""Config imports above a size, run by a worker: the upload is stored as a job and
answered at once (202), so no upload ever meets the web server's timeout.

A job goes ``pending`` -> ``running`` (``stage`` and ``progress`` say how far) ->
``done`` (``versions`` and ``changes`` it stored) or ``failed`` (``error``).  A failed
job leaves exactly one alert in the feed: the importer's refusal when it raised one,
else one naming the job.  A redelivered task finds its job done or running (leased
for ``DASHBOARD_RUN_LEASE_SECONDS``) and does nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Q

from dashboard import models
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.plumbing.users import stored_user
from dashboard.services.alerts import raise_alert
from dashboard.services.configs.versions import import_config
from dashboard.services.limits import check_config_size, check_names_given, check_upload_size
from dashboard.services.runs.requests import send_task_on_commit

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike

logger = logging.getLogger(__name__)


def async_import_bytes() -> int:
    """Uploads larger than this are imported by a worker (``DASHBOARD_IMPORT_ASYNC_BYTES``)."""
    return int(getattr(settings, "DASHBOARD_IMPORT_ASYNC_BYTES", 256 * 1024))


def queue_config_import(
    data: bytes,
    *,
    filename: str = "queues.yaml",
    user: UserLike = None,
    partition: str | None = None,
    cluster: str | None = None,
    now: datetime | None = None,
) -> models.ImportJob:
    """Store the upload as a pending job; the worker imports it once this commits."""
    check_upload_size(filename, len(data))
    check_config_size(filename, len(data))
    check_names_given(partition=partition, cluster=cluster)
    job = models.ImportJob.objects.create(
        kind="config",
        filename=filename[:255],
        partition=partition or "",
        cluster=cluster or "",
        data=data,
        size=len(data),
        stage="queued",
        created_by=stored_user(user),
        created_at=now or utcnow(),
    )
    send_task_on_commit("dashboard.run_import_job", job.pk)
    return job


def _progress(job_id: int, stage: str, percent: int) -> None:
    # outside the import's transaction: readers see it at once
    models.ImportJob.objects.filter(pk=job_id).update(stage=stage[:200], progress=percent)


def run_import_job(job_id: int, now: datetime | None = None) -> models.ImportJob | None:
    """Import a pending job's upload (the task ``dashboard.run_import_job``)."""
    started = now or utcnow()
    lease = timedelta(seconds=float(settings.DASHBOARD_RUN_LEASE_SECONDS))
    claimed = (
        models.ImportJob.objects.filter(pk=job_id)
        .filter(
            Q(status=models.ImportJob.Status.PENDING)
            | Q(status=models.ImportJob.Status.RUNNING, started_at__lt=started - lease)
        )
        .update(
            status=models.ImportJob.Status.RUNNING,
            started_at=started,
            stage="reading the file",
            progress=5,
        )
    )
    if not claimed:
        return None
    job = models.ImportJob.objects.select_related("created_by").get(pk=job_id)
    try:
        result = import_config(
            bytes(job.data),
            filename=job.filename,
            user=job.created_by,
            partition=job.partition or None,
            cluster=job.cluster or None,
            progress=lambda stage, percent: _progress(job_id, stage, percent),
        )
    except Exception as exc:
        message = exc.message if isinstance(exc, ServiceError) else f"{type(exc).__name__}: {exc}"
        models.ImportJob.objects.filter(pk=job_id).update(
            status=models.ImportJob.Status.FAILED,
            error=message[:4000],
            stage="failed",
            finished_at=utcnow(),
        )
        alerted = models.Alert.objects.filter(
            kind=models.Alert.Kind.IMPORT_FAILED, last_seen_at__gte=started
        ).exists()
        if not alerted:  # one alert per failure: the importer's refusal, else this one
            raise_alert(
                models.Alert.Kind.IMPORT_FAILED,
                f"config import job {job_id} ({job.filename}) failed: {message}",
                level=models.Alert.Level.ERROR,
            )
        if not isinstance(exc, ServiceError):
            logger.exception("config import job %s failed", job_id)
        job.refresh_from_db()
        return job
    models.ImportJob.objects.filter(pk=job_id).update(
        status=models.ImportJob.Status.DONE,
        stage=f"done: {len(result.versions)} version(s), {len(result.changes)} quota change(s)",
        progress=100,
        versions=[v.pk for v in result.versions],
        changes=[c.pk for c in result.changes],
        finished_at=utcnow(),
    )
    job.refresh_from_db()
    return job

"""A real Celery worker (and beat) against real Redis: results stored once, even across kills.

Work is submitted through the REST API; the tests poll the database, with a
bound, until the stored result appears.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from integration_support import SCENARIO, wait_for
from rest_framework.test import APIClient

from dashboard import models

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _snapshot(api: APIClient) -> int:
    response = api.post("/api/snapshots/", SCENARIO, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


def _run(run_id: int) -> models.PreemptionRun:
    return models.PreemptionRun.objects.get(pk=run_id)


def test_worker_stores_the_answer_of_a_submitted_whatif(cluster: Any, staff_api: APIClient) -> None:
    worker = cluster.worker()
    snapshot_id = _snapshot(staff_api)
    response = staff_api.post(
        "/api/whatif/preempt/", {"snapshot": snapshot_id, "ask_key": "ask-1"}, format="json"
    )
    assert response.status_code == 202, response.content
    run_id = response.json()["id"]
    wait_for(lambda: _run(run_id).status == "done", 60, "the worker to finish the run", worker)
    run = _run(run_id)
    assert (run.outcome, run.attempts) == ("preempted", 1)
    assert run.result is not None
    assert list(run.victims.values_list("allocation_key", flat=True)) == run.result["victims"]
    quota = staff_api.post(
        "/api/whatif/quota/",
        {"snapshot": snapshot_id, "queue": "root.a", "new_max": {"vcore": 5000}},
        format="json",
    ).json()
    wait_for(lambda: _run(quota["id"]).status == "done", 60, "the quota plan", worker)
    assert _run(quota["id"]).outcome == "enforced"


def test_worker_killed_mid_task_finishes_once_after_restart(
    cluster: Any, staff_api: APIClient
) -> None:
    """SIGKILL during a task: the redelivered message completes it once, no duplicate rows."""
    slow = {
        "DASHBOARD_TEST_TASK_DELAY": "120",
        "DASHBOARD_RUN_LEASE_SECONDS": "4",
        "CELERY_VISIBILITY_TIMEOUT": "6",
    }
    first = cluster.worker(**slow)
    snapshot_id = _snapshot(staff_api)
    run_id = staff_api.post(
        "/api/whatif/preempt/", {"snapshot": snapshot_id, "ask_key": "ask-1"}, format="json"
    ).json()["id"]
    wait_for(lambda: _run(run_id).status == "running", 60, "the first worker to claim it", first)
    wait_for(lambda: "sleeps" in first.text(), 30, "the task to be in its slow part", first)
    first.kill()  # SIGKILL to the whole worker (main process and pool child)
    run = _run(run_id)
    assert (run.status, run.attempts, run.victims.count()) == ("running", 1, 0)

    # Kombu's Redis transport scans for messages to restore when a worker starts, then
    # only on every tenth of its ten-second sweeps (unacked_restore_throttle x
    # unacked_restore_interval): start the second worker once the message has outlived
    # its visibility timeout, so the first scan takes it back.
    time.sleep(int(slow["CELERY_VISIBILITY_TIMEOUT"]) + 1)
    second = cluster.worker(DASHBOARD_RUN_LEASE_SECONDS="4", CELERY_VISIBILITY_TIMEOUT="6")
    wait_for(lambda: _run(run_id).status == "done", 120, "the redelivered task to finish", second)
    run = _run(run_id)
    assert run.attempts == 2
    assert models.PreemptionRun.objects.count() == 1
    keys = list(run.victims.values_list("allocation_key", flat=True))
    assert run.result is not None
    assert keys == run.result["victims"]
    assert len(keys) == len(set(keys))


def test_change_due_while_worker_and_beat_are_stopped_fires_once_after_restart(
    cluster: Any, staff_api: APIClient
) -> None:
    """The deadline is in the database: it passes while nothing runs, then fires exactly once."""
    sweep_fast = {"DASHBOARD_SWEEP_SECONDS": "1"}
    procs = [cluster.worker(**sweep_fast), cluster.beat(**sweep_fast)]
    _snapshot(staff_api)
    # root.a has no max yet: rule set seed starts a timer for a newly set max
    models.Partition.objects.update(timer_rules="seed")
    response = staff_api.post(
        "/api/quota-changes/",
        {
            "partition": "default",
            "queue_path": "root.a",
            "new_max": {"vcore": 5000},
            "new_delay": 8,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    change_id = response.json()["id"]
    for proc in procs:
        proc.kill(sig=15)  # a normal stop (SIGTERM): web, worker and beat going down
    change = models.QuotaChange.objects.get(pk=change_id)
    assert change.state == "waiting", "stopped before the deadline"
    assert change.deadline is not None
    deadline = change.deadline
    # let the deadline pass while nothing runs (waiting for the clock, not asserting timing)
    while timezone.now() < deadline + timedelta(seconds=1):
        time.sleep(0.2)
    assert models.QuotaChange.objects.get(pk=change_id).state == "waiting"

    worker = cluster.worker(**sweep_fast)
    cluster.beat(**sweep_fast)
    wait_for(
        lambda: models.QuotaChange.objects.get(pk=change_id).state == "fired",
        60,
        "the restarted beat and worker to fire the change",
        worker,
    )
    # a few more sweeps must not fire it again
    sweeps = worker.text().count("dashboard.sweep_quota_changes")
    wait_for(
        lambda: worker.text().count("dashboard.sweep_quota_changes") >= sweeps + 6,
        30,
        "three more sweeps",
        worker,
    )
    runs = models.PreemptionRun.objects.filter(kind="quota_enforcement")
    assert runs.count() == 1
    [run] = runs
    assert run.idempotency_key == f"quota-change-{change_id}"
    assert (run.status, run.trigger, run.outcome) == ("done", "timer", "enforced")
    keys = list(run.victims.values_list("allocation_key", flat=True))
    assert run.result is not None
    assert keys == run.result["victims"]
    assert len(keys) == len(set(keys))


def test_worker_imports_a_large_config_upload_as_a_job(
    cluster: Any, staff_api: APIClient, settings: Any
) -> None:
    """A config above DASHBOARD_IMPORT_ASYNC_BYTES: 202 at once, a real worker imports it,
    the job row shows its progress and what it stored."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from queue_configs import config_yaml

    settings.DASHBOARD_IMPORT_ASYNC_BYTES = 50_000
    text = config_yaml(2000, 0).encode()
    worker = cluster.worker()
    response = staff_api.post(
        "/api/configs/", {"file": SimpleUploadedFile("big.yaml", text)}, format="multipart"
    )
    assert response.status_code == 202, response.content[:500]
    job_id = response.json()["id"]
    wait_for(
        lambda: models.ImportJob.objects.get(pk=job_id).status in ("done", "failed"),
        180,
        "the worker to import the config",
        worker,
    )
    job = staff_api.get(f"/api/import-jobs/{job_id}/").json()
    assert (job["status"], job["progress"], job["error"]) == ("done", 100, ""), job
    version = models.ConfigVersion.objects.get(pk=job["versions"][0])
    assert version.queues.count() > 1900
    print(f"[figures] import job of {len(text)} bytes: {job['stage']}")

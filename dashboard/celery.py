"""The Celery application: configuration from Django settings (``CELERY_*``) and the beat schedule.

Deadlines of quota changes live in the database; beat only runs the sweep that
finds the due ones, so nothing time-critical is ever held in the broker.

Every process imports this module (``dashboard/__init__.py``), web and ``manage.py``
jobs too: what only beat or a worker needs is imported there (beat's scheduler is
in :mod:`dashboard.beat`; the code the tasks run, in :func:`_import_task_code`).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from celery import Celery
from celery.signals import beat_init, heartbeat_sent, worker_init, worker_ready
from kombu import transport

from dashboard import heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
# Celery's Django fixup runs Django's system checks when a worker or beat starts; they
# load the URL configuration and with it every view, the API, the admin and the
# services: about half of such a start's CPU, for checks of the same code and settings
# that the web's `manage.py migrate` / `check` run. CELERY_SKIP_CHECKS= (empty) in the
# environment runs them again.
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

# ``sqla+...`` broker URLs (the embedded default) use the dashboard's subclass of kombu's
# SQLAlchemy transport, which polls every DASHBOARD_BROKER_POLL_SECONDS instead of 1 s.
transport.TRANSPORT_ALIASES["sqla"] = "dashboard.broker:Transport"

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard"])
# beat marks itself alive on every tick (the liveness probe: dashboard/heartbeat.py),
# and ticks at least every 30 s whatever its schedule, so the mark never goes stale
app.conf.beat_scheduler = "dashboard.beat:HeartbeatScheduler"
app.conf.beat_max_loop_interval = 30


@app.on_after_configure.connect
def _schedule_sweep(sender: Celery, **_: object) -> None:
    from django.conf import settings

    sender.add_periodic_task(
        settings.DASHBOARD_SWEEP_SECONDS,
        sender.signature("dashboard.sweep_quota_changes"),
        name="sweep quota changes and stale runs",
    )


def _mark_started(name: str) -> None:
    """Leave ``<name>.ready`` in ``DASHBOARD_READY_DIR`` when it is set (``./scripts/run``).

    The script prints the address and the demo credentials once the web server answers
    and the worker and beat have started, so that no start-up line buries them.
    """
    folder = os.environ.get("DASHBOARD_READY_DIR")
    if folder:
        (Path(folder) / f"{name}.ready").touch()


# What the tasks run: the task modules import it when a task runs, not when they are
# registered (dashboard/tasks.py), so that a process that only sets Django up does not.
TASK_CODE = (
    "dashboard.services",
    "dashboard.alerting.delivery",
    "dashboard.sources.services",
    "dashboard.sources.faults",
    "dashboard.sources.retention",
)


@worker_init.connect
def _import_task_code(**_: object) -> None:
    """A worker imports the tasks' code once, before its pool starts: the forked pool
    processes share it instead of each importing it at its first task."""
    for name in TASK_CODE:
        importlib.import_module(name)


@worker_ready.connect
def _worker_ready(**_: object) -> None:
    _mark_started("worker")
    heartbeat.touch()


@heartbeat_sent.connect
def _worker_alive(**_: object) -> None:
    """Every heartbeat of the worker's consumer (2 s): its loop runs, its broker answers."""
    heartbeat.touch()


@beat_init.connect
def _beat_started(**_: object) -> None:
    _mark_started("beat")
    heartbeat.touch()

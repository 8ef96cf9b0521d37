"""The Celery application: configuration from Django settings (``CELERY_*``) and the beat schedule.

Deadlines of quota changes live in the database; beat only runs the sweep that
finds the due ones, so nothing time-critical is ever held in the broker.
"""

from __future__ import annotations

import os
from pathlib import Path

from celery import Celery
from celery.beat import PersistentScheduler
from celery.signals import beat_init, heartbeat_sent, worker_ready
from kombu import transport

from dashboard import heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

# ``sqla+...`` broker URLs (the embedded default) use the dashboard's subclass of kombu's
# SQLAlchemy transport, which polls every DASHBOARD_BROKER_POLL_SECONDS instead of 1 s.
transport.TRANSPORT_ALIASES["sqla"] = "dashboard.broker:Transport"

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard"])
# beat marks itself alive on every tick (the liveness probe: dashboard/heartbeat.py),
# and ticks at least every 30 s whatever its schedule, so the mark never goes stale
app.conf.beat_scheduler = "dashboard.celery:HeartbeatScheduler"
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


class HeartbeatScheduler(PersistentScheduler):
    """Celery's default scheduler (the schedule kept in a file) that marks beat alive on
    every tick, i.e. whenever it has checked what is due and sent it."""

    def tick(self, *args: object, **kwargs: object) -> float:
        interval = float(super().tick(*args, **kwargs))  # type: ignore[arg-type]
        heartbeat.touch()
        return interval

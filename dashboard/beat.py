"""Beat's scheduler (``beat_scheduler`` in :mod:`dashboard.celery`), apart so that only
beat imports ``celery.beat``."""

from __future__ import annotations

from celery.beat import PersistentScheduler

from dashboard import heartbeat


class HeartbeatScheduler(PersistentScheduler):
    """Celery's default scheduler (the schedule kept in a file) that marks beat alive on
    every tick, i.e. whenever it has checked what is due and sent it."""

    def tick(self, *args: object, **kwargs: object) -> float:
        interval = float(super().tick(*args, **kwargs))  # type: ignore[arg-type]
        heartbeat.touch()
        return interval

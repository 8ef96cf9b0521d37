"""App configuration of the dashboard; registers its Celery tasks when Django starts."""

from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "YuniKorn preemption dashboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Services send tasks by name; importing the envelopes here registers them in
        # every process that sets Django up, so an eager (test) app runs them in place.
        from dashboard import tasks  # noqa: F401

"""App config of the cluster-sources app; registers its Celery tasks when Django starts."""

from __future__ import annotations

from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "dashboard.sources"
    label = "sources"
    verbose_name = "Cluster sources"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The Celery app autodiscovers ``dashboard.tasks`` only; importing ours here
        # registers them in every process that sets Django up (web, worker, beat).
        from dashboard.sources import pollers, tasks  # noqa: F401  (pollers: signals)

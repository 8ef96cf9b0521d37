"""The dashboard Django project and app: imports, quota changes, runs, alerts, API."""

from __future__ import annotations

from dashboard.celery import app as celery_app

__all__ = ["celery_app"]

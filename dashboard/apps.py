"""App configuration of the dashboard."""

from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "YuniKorn preemption dashboard"
    default_auto_field = "django.db.models.BigAutoField"

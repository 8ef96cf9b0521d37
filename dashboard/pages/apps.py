"""App configuration of the pages (their template tags)."""

from __future__ import annotations

from django.apps import AppConfig


class PagesConfig(AppConfig):
    name = "dashboard.pages"
    label = "pages"
    verbose_name = "Dashboard pages"

"""App configuration of the pages: template tags and the ``vendor_plotly`` command."""

from __future__ import annotations

from django.apps import AppConfig


class PagesConfig(AppConfig):
    name = "dashboard.pages"
    label = "pages"
    verbose_name = "Dashboard pages"

"""``manage.py vendor_plotly``: copy plotly.js from the pinned ``plotly`` package into static/."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from dashboard.pages import vendor


class Command(BaseCommand):
    help = "Copy plotly.min.js from the installed plotly package into static/dashboard/vendor/."

    def handle(self, *args: Any, **options: Any) -> None:
        target = vendor.copy_bundle()
        self.stdout.write(f"{target} ({target.stat().st_size:,} bytes)")

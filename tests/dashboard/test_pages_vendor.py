"""plotly.js is served from static/, byte-identical to the bundle of the pinned plotly package."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.template.loader import render_to_string

from dashboard.pages import vendor


def test_committed_bundle_is_the_pinned_packages() -> None:
    """static/dashboard/vendor/plotly.min.js == plotly/package_data/plotly.min.js.

    After a plotly upgrade this fails until ``manage.py vendor_plotly`` is run,
    so the figures the Python side builds always meet the plotly.js made for them.
    """
    assert vendor.vendored_bundle().read_bytes() == vendor.package_bundle().read_bytes()


def test_vendor_command_copies_the_bundle(settings: Any, tmp_path: Path) -> None:
    settings.BASE_DIR = tmp_path
    out = io.StringIO()
    call_command("vendor_plotly", stdout=out)
    copied = tmp_path / "static" / vendor.STATIC_PATH
    assert copied.read_bytes() == vendor.package_bundle().read_bytes()
    assert str(copied) in out.getvalue()


def test_pages_load_plotly_from_static_never_a_cdn() -> None:
    """The layout and the figure pages reference only our own static files."""
    templates = Path(__file__).resolve().parents[2] / "templates"
    for path in templates.rglob("*.html"):
        text = path.read_text()
        assert "cdn." not in text.lower(), path
        assert "https://" not in text, path
        assert "http://" not in text, path
    assert "/static/dashboard/vendor/plotly.min.js" in render_to_string("dashboard/_plotly.html")

"""plotly.js is served from static/: a partial bundle, built from the npm registry's
plotly.js at the version the pinned plotly package bundles, of the trace types drawn."""

from __future__ import annotations

import json
import re
from pathlib import Path

from django.template.loader import render_to_string

from dashboard.pages import vendor

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / vendor.BUILD_DIR


def test_the_bundle_is_the_pinned_packages_plotly_js_version() -> None:
    """After a plotly upgrade this fails until scripts/plotly-bundle/build.sh is rerun
    at the new version, so the figures built in Python meet the plotly.js made for them."""
    expected = vendor.bundle_version(vendor.package_bundle())
    assert expected == vendor.bundle_version(vendor.vendored_bundle())
    package = json.loads((BUILD / "package.json").read_text())
    assert expected == package["dependencies"]["plotly.js"]
    lock = json.loads((BUILD / "package-lock.json").read_text())
    assert expected == lock["packages"]["node_modules/plotly.js"]["version"]


def test_the_bundle_registers_only_the_trace_types_the_charts_draw() -> None:
    """The entry module registers TRACE_TYPES, and they are the charts' trace types."""
    entry = (BUILD / "entry.cjs").read_text()
    registered = re.findall(r'require\("plotly\.js/lib/(\w+)"\)', entry)
    assert list(vendor.TRACE_TYPES) == sorted(set(registered) - {"core"})
    drawn = set()
    for path in (ROOT / "dashboard" / "charts").glob("*.py"):
        for match in re.finditer(r'"type": "(\w+)"', path.read_text()):
            drawn.add(match.group(1))
    axis_and_shape_types = {"category", "date", "rect", "line", "linear", "log"}
    assert set(vendor.TRACE_TYPES) == drawn - axis_and_shape_types
    smaller = vendor.vendored_bundle().stat().st_size
    assert smaller < vendor.package_bundle().stat().st_size / 2


def test_the_bundle_ships_with_its_licence() -> None:
    folder = vendor.vendored_bundle().parent
    assert "MIT License" in (folder / "plotly.js-LICENSE.txt").read_text()
    assert (folder / "plotly-dashboard.min.js.LEGAL.txt").is_file()


def test_pages_load_plotly_from_static_never_a_cdn() -> None:
    """The layout and the figure pages reference only our own static files."""
    templates = ROOT / "templates"
    for path in templates.rglob("*.html"):
        text = path.read_text()
        assert "cdn." not in text.lower(), path
        assert "https://" not in text, path
        assert "http://" not in text, path
    assert f"/static/{vendor.STATIC_PATH}" in render_to_string("dashboard/_plotly.html")

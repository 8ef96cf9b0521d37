"""Where the pages' plotly.js comes from: the bundle inside the pinned ``plotly`` package.

plotly.js is served from ``static/`` (never a CDN).  The committed copy must be
byte-identical to the bundle shipped in the installed ``plotly`` wheel, so the
figures the Python library builds always meet the plotly.js they were built for;
``python manage.py vendor_plotly`` refreshes the copy after a version bump.
"""

from __future__ import annotations

from pathlib import Path

import plotly
from django.conf import settings

#: The URL path (under STATIC_URL) the templates load.
STATIC_PATH = "dashboard/vendor/plotly.min.js"


def package_bundle() -> Path:
    """The minified plotly.js bundle inside the installed ``plotly`` package."""
    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def vendored_bundle() -> Path:
    """The copy served from the project's ``static/`` folder."""
    return Path(settings.BASE_DIR) / "static" / STATIC_PATH


def copy_bundle() -> Path:
    """Copy the package's bundle into ``static/``; returns the written path."""
    target = vendored_bundle()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(package_bundle().read_bytes())
    return target

"""Where the pages' plotly.js comes from: a partial bundle of the trace types they draw.

plotly.js is served from ``static/`` (never a CDN).  The committed bundle is built by
``scripts/plotly-bundle/build.sh`` with plotly.js's own ``lib/`` index modules from the
npm registry, at the plotly.js version the pinned ``plotly`` Python package bundles, so
the figures the Python side builds always meet the plotly.js they were built for.  It
registers only :data:`TRACE_TYPES` (the whole library is several times larger).
"""

from __future__ import annotations

import re
from pathlib import Path

import plotly
from django.conf import settings

#: The URL path (under STATIC_URL) the templates load.
STATIC_PATH = "dashboard/vendor/plotly-dashboard.min.js"

#: The trace types the bundle holds: those ``dashboard/charts`` draws.
TRACE_TYPES = ("bar", "heatmap", "icicle", "scatter")

#: The build folder (package.json, lock file, entry module, esbuild script).
BUILD_DIR = "scripts/plotly-bundle"

_VERSION = re.compile(rb"plotly\.js v(\d+\.\d+\.\d+)")


def package_bundle() -> Path:
    """The minified full plotly.js bundle inside the installed ``plotly`` package."""
    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def vendored_bundle() -> Path:
    """The partial bundle served from the project's ``static/`` folder."""
    return Path(settings.BASE_DIR) / "static" / STATIC_PATH


def bundle_version(path: Path) -> str:
    """The plotly.js version a bundle names in its opening comment."""
    with path.open("rb") as f:
        found = _VERSION.search(f.read(400))
    if found is None:
        raise ValueError(f"{path} does not name its plotly.js version")
    return found.group(1).decode()

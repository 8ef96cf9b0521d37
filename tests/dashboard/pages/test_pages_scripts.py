"""The pages' script, one file per concern (static/dashboard/js/): every page loads
common.js and figures.js, then the files of its own parts, then start.js, in that order,
from static/ (no inline script: the CSP's script-src is 'self'); a page that shows a
part's markup loads that part's file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "templates"
JS = ROOT / "static" / "dashboard" / "js"

#: The markup each page-part file sets up (the attribute or id its script looks for).
PART_MARKUP = {
    "tree.js": ["data-tree"],
    "live.js": ["data-live"],
    "whatif.js": ["data-whatif", "whatif-live"],
    "maxforms.js": ["data-max-fields"],
    "uploads.js": ["data-upload"],
}
#: Pieces a view renders on its own and passes to a page as a variable.
RENDERED_INTO = {
    "dashboard/tree.html": ["dashboard/_tree_timers.html"],
    "dashboard/history.html": ["dashboard/_history_live.html"],
    "dashboard/plan.html": ["dashboard/_plan_answer.html"],
    "dashboard/whatif.html": ["dashboard/_whatif_answer.html"],
}
SCRIPT = re.compile(r"<script\b([^>]*)>")
STATIC_JS = re.compile(r"""\{% static ['"]dashboard/js/([\w.-]+)['"] %\}""")
INCLUDE = re.compile(r"""\{% include ['"]([\w/.-]+)['"]""")
PAGE_SCRIPTS = re.compile(r"\{% block page_scripts %\}(.*?)\{% endblock %\}", re.S)

pytestmark = pytest.mark.django_db


def _with_pieces(name: str) -> str:
    """A template's text with the pieces it includes or is given, transitively."""
    text = (TEMPLATES / name).read_text()
    pieces = INCLUDE.findall(text) + RENDERED_INTO.get(name, [])
    return text + "".join(_with_pieces(piece) for piece in pieces)


def _pages() -> list[str]:
    return sorted(
        str(path.relative_to(TEMPLATES))
        for path in TEMPLATES.rglob("*.html")
        if '{% extends "base.html" %}' in path.read_text()
    )


def test_a_page_showing_a_parts_markup_loads_that_parts_file() -> None:
    pages = _pages()
    assert "dashboard/whatif.html" in pages
    assert "dashboard/tree.html" in pages
    for page in pages:
        block = PAGE_SCRIPTS.search((TEMPLATES / page).read_text())
        loaded = STATIC_JS.findall(block.group(1)) if block else []
        text = _with_pieces(page)
        needed = sorted(
            script
            for script, markers in PART_MARKUP.items()
            if any(re.search(rf"""(?<![\w-]){re.escape(m)}(?![\w-])""", text) for m in markers)
        )
        assert sorted(loaded) == needed, page


def test_every_script_file_is_loaded_and_every_loaded_file_exists() -> None:
    loaded: set[str] = set()
    for path in TEMPLATES.rglob("*.html"):
        loaded.update(STATIC_JS.findall(path.read_text()))
    assert loaded == {path.name for path in JS.glob("*.js")}
    assert "app.js" not in loaded


def _scripts(html: str) -> list[tuple[str, bool]]:
    """The page's external scripts in page order: (file name, deferred)."""
    found = []
    for attributes in SCRIPT.findall(html):
        src = re.search(r'src="([^"]+)"', attributes)
        if src:
            found.append((src.group(1).rsplit("/", 1)[-1], " defer" in attributes))
    return found


def test_the_pages_load_their_files_in_order(staff: Any) -> None:
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=factories.small_scenario(),
    )
    client = Client()
    client.force_login(staff)
    plotly = ("plotly-dashboard.min.js", True)
    common = [("common.js", True), ("figures.js", True)]
    last = [("start.js", True)]
    tree = client.get(reverse("tree")).content.decode()
    # the tree is drawn where the page is parsed: plotly.js and the two files in place
    assert _scripts(tree) == [
        ("theme.js", False),
        ("plotly-dashboard.min.js", False),
        ("common.js", False),
        ("figures.js", False),
        ("tree.js", True),
        *last,
    ]
    whatif = client.get(reverse("whatif")).content.decode()
    assert _scripts(whatif) == [
        ("theme.js", False),
        plotly,
        *common,
        ("live.js", True),
        ("maxforms.js", True),
        ("whatif.js", True),
        *last,
    ]
    imports = client.get(reverse("import")).content.decode()
    assert _scripts(imports) == [("theme.js", False), *common, ("uploads.js", True), *last]
    for html in (tree, whatif, imports):
        assert "<script>" not in html  # nothing inline (json_script data has an id)

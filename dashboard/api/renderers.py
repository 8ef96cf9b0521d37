"""The browsable API's renderer: DRF's, with the page's language declared.

DRF's base template opens with a bare ``<html>`` that no block can change; screen
readers need the page's language (axe ``html-has-lang``). The rest of the product's
frame is a template override (``templates/rest_framework/api.html``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import renderers

#: DRF's opening tag, and the product's.
_BARE_HTML = "<html>"
_HTML_EN = '<html lang="en">'


class BrowsableAPIRenderer(renderers.BrowsableAPIRenderer):
    """DRF's browsable API with ``lang="en"`` on its ``<html>`` element."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> Any:
        page = super().render(data, accepted_media_type, renderer_context)
        if isinstance(page, bytes):
            return page.replace(_BARE_HTML.encode(), _HTML_EN.encode(), 1)
        return page.replace(_BARE_HTML, _HTML_EN, 1) if isinstance(page, str) else page

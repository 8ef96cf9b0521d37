"""The Content-Security-Policy header of every answer.

The pages load scripts, styles, fonts and images from the dashboard's own origin
only (Plotly and the API docs' assets are served from ``static/``), so nothing is
fetched from outside the machine and no inline script runs.  Inline *styles* are
allowed: Plotly sets positions and colours through style attributes and the pages
size their bars with ``style="width: ..."``; a style cannot run code.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        # Plotly draws its mode bar icons and exports as data: and blob: images
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    """Sets ``Content-Security-Policy`` on every response that has none."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

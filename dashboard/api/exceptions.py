"""API error bodies: every error names the offending field in ``{"field": [...]}`` form."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler; a ``detail``-only body also gets a ``code`` so clients can branch."""
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        code = getattr(getattr(exc, "detail", None), "code", None)
        if code is not None and "code" not in response.data:
            response.data["code"] = str(code)
    return response

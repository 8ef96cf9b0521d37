"""API error bodies: every error names the offending field in ``{"field": [...]}`` form.

Service errors (``ServiceError``) become 400 with the field they name (409 for an
idempotency key reused with another request); uploads
above the limit become 413 naming the limit; a request body above Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` also becomes 413; a database that cannot be reached
is a JSON 503 with ``Retry-After`` (a client retries; never an HTML 500 page).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from dashboard.services import IdempotencyConflict, OverLimit, ServiceError, UploadTooLarge


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus service errors, oversized bodies and an unreachable database."""
    if isinstance(exc, OperationalError | InterfaceError):
        return Response(
            {
                "detail": "the database cannot be reached; try again shortly",
                "code": "database_unavailable",
            },
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "30"},
        )
    if isinstance(exc, UploadTooLarge):
        return Response(
            {exc.field: [exc.message], "limit_bytes": settings.DASHBOARD_MAX_UPLOAD_BYTES},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, OverLimit):
        return Response(
            {exc.field: [exc.message], "limit": exc.limit, "setting": exc.setting},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, IdempotencyConflict):
        return Response({exc.field: [exc.message]}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ServiceError):
        return Response({exc.field: [exc.message]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {
                "detail": f"request body larger than the limit of {limit} bytes "
                "(DATA_UPLOAD_MAX_MEMORY_SIZE)",
                "limit_bytes": limit,
            },
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        code = getattr(getattr(exc, "detail", None), "code", None)
        if code is not None and "code" not in response.data:
            response.data["code"] = str(code)
    return response

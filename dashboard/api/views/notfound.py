"""The API's answer to a path no route matches."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


@extend_schema(exclude=True)
class ApiNotFound(APIView):
    """An ``/api/`` path no route matches: a JSON 404 (not Django's HTML page), after the
    same authentication and permission checks as every API view."""

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound()

    get = post = put = patch = delete = _not_found

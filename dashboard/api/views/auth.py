"""The API's token endpoint."""

from __future__ import annotations

from typing import Any

from axes.handlers.proxy import AxesProxyHandler
from rest_framework import status
from rest_framework.authtoken import views as authtoken_views
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import signin


class ObtainAuthToken(authtoken_views.ObtainAuthToken):
    """DRF's token endpoint, refusing a locked-out username and address with 429.

    django-axes counts the failures (they go through ``authenticate()``); its
    middleware cannot see a lockout flagged on DRF's request wrapper, so the
    lockout is checked here before the credentials are.
    """

    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = request.data if hasattr(request.data, "get") else {}
        problems = {
            field: [problem]
            for field in ("username", "password")
            if field in data
            and (problem := signin.credential_problem(field, data.get(field))) is not None
        }
        if problems:
            return Response(problems, status=status.HTTP_400_BAD_REQUEST)
        username = data.get("username")
        credentials = {"username": username} if isinstance(username, str) else None
        if AxesProxyHandler.is_locked(request._request, credentials):
            return Response(
                {"detail": "too many failed logins: try again later"},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
            )
        return super().post(request, *args, **kwargs)

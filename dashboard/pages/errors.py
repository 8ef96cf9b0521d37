"""The answer of a request that failed with an error nobody handled (``handler500``).

A database that cannot be reached is no bug of the page: the pages answer a 503 page
saying so (``Retry-After``), as the API answers its JSON 503, whether the error came
from a view or from a middleware reading the session or the user.  The page is
rendered without the request's context processors, which would ask the database
again.  Any other error keeps Django's 500 page.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views.defaults import server_error as django_server_error

RETRY_AFTER_SECONDS = 30


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503: JSON under ``/api/`` (the API's own answer), the 503 page elsewhere."""
    if request.path_info.startswith("/api/"):
        answer: HttpResponse = JsonResponse(
            {
                "detail": "the database cannot be reached; try again shortly",
                "code": "database_unavailable",
            },
            status=503,
        )
    else:
        answer = HttpResponse(render_to_string("503.html"), status=503)
    answer["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return answer


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: 503 for an unreachable database, Django's 500 otherwise."""
    error = sys.exc_info()[1]
    if isinstance(error, OperationalError | InterfaceError):
        return database_unavailable(request)
    return django_server_error(request)

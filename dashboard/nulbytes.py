"""One guard against NUL bytes in request input: query strings, form and multipart
fields, uploaded file names and JSON bodies.

PostgreSQL cannot store a NUL character in text (nor ``\\u0000`` in ``jsonb``), so
such input used to reach the database and fail there as a 500.  It is refused up
front instead, with a 400 naming the field:

- :class:`NulByteGuardMiddleware` checks every query string, and the fields and file
  names of form and multipart POST bodies (pages and API alike: DRF reuses the
  fields Django parsed);
- the API's parsers (:mod:`dashboard.api.parsers`) check what they parse - JSON
  bodies, and form or multipart bodies of PUT/PATCH - with :func:`find_nul`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError

NUL = "\x00"
MESSAGE = "contains a NUL byte (\\x00), which is not accepted"


def shown(name: str) -> str:
    """A field name fit for an error message (its NUL bytes written as ``\\x00``)."""
    return name.replace(NUL, "\\x00")


def find_nul(data: object, path: str = "") -> str | None:
    """The path (``a.b[2].c``) of the first key or string holding a NUL byte, else None.

    >>> find_nul({"a": [1, "x", {"b\\x00": 2}]}), find_nul({"a": "ok"})
    ('a[2].b\\\\x00', None)
    """
    stack: list[tuple[str, object]] = [(path, data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, str):
            if NUL in value:
                return where or "body"
        elif isinstance(value, Mapping):
            items = list(value.items())
            for key, item in reversed(items):
                name = f"{where}.{key}" if where else str(key)
                if NUL in str(key):
                    return shown(name)
                stack.append((shown(name), item))
        elif isinstance(value, list | tuple):
            for i in reversed(range(len(value))):
                stack.append((f"{where}[{i}]", value[i]))
    return None


def find_nul_in_fields(fields: Iterable[tuple[str, Iterable[str]]]) -> str | None:
    """The first field name whose name or one of whose values holds a NUL byte."""
    for key, values in fields:
        if NUL in key or any(NUL in v for v in values):
            return shown(key)
    return None


def _refusal(request: HttpRequest, field: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({field: [MESSAGE]}, status=400)
    return HttpResponseBadRequest(
        f"Bad request: {field} {MESSAGE}.".encode(), content_type="text/plain; charset=utf-8"
    )


def _flood(request: HttpRequest, exc: TooManyFieldsSent | TooManyFilesSent) -> HttpResponse:
    """A form with more fields or files than Django reads: 400 saying which limit."""
    if isinstance(exc, TooManyFieldsSent):
        text = f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} form fields"
        limit = "DATA_UPLOAD_MAX_NUMBER_FIELDS"
    else:
        text = f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files"
        limit = "DATA_UPLOAD_MAX_NUMBER_FILES"
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": f"the request has {text} ({limit})"}, status=400)
    return HttpResponseBadRequest(
        f"Bad request: {text}.".encode(), content_type="text/plain; charset=utf-8"
    )


def _form_fields(request: HttpRequest) -> str | None:
    found = find_nul_in_fields(request.POST.lists())
    if found is not None:
        return found
    for key, files in request.FILES.lists():
        if NUL in key or any(NUL in (f.name or "") for f in files):
            return shown(key)
    return None


class NulByteGuardMiddleware:
    """Answers 400 naming the field when a query string or form field holds a NUL byte."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        found = find_nul_in_fields(request.GET.lists())
        if found is not None:
            return _refusal(request, found)
        if request.method != "POST" or request.content_type not in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            return None
        try:
            found = _form_fields(request)
        except RequestDataTooBig:
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            return JsonResponse(
                {
                    "detail": f"request body larger than the limit of {limit} bytes "
                    "(DATA_UPLOAD_MAX_MEMORY_SIZE)",
                    "limit_bytes": limit,
                },
                status=413,
            )
        except (TooManyFieldsSent, TooManyFilesSent) as exc:
            return _flood(request, exc)
        except MultiPartParserError as exc:
            return JsonResponse({"detail": f"Multipart form parse error - {exc}"}, status=400)
        return _refusal(request, found) if found is not None else None

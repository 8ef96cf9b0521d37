"""Request shapes refused before a view reads them: a body sent chunked (no
Content-Length), which Django would read as empty, is answered 411.

(Bodies above the size limit by their Content-Length are refused elsewhere; form
floods - too many fields or files - are answered by :mod:`dashboard.nulbytes`, which
parses the forms.)
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

MESSAGE = (
    "a request body must be sent with a Content-Length header (chunked transfer encoding "
    "is not read)"
)


class ChunkedBodyGuardMiddleware:
    """Answers 411 (JSON under /api/, plain text elsewhere) for a request announcing a
    chunked body without a Content-Length."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE}, status=411)
            return HttpResponse(
                f"Length required: {MESSAGE}.".encode(),
                status=411,
                content_type="text/plain; charset=utf-8",
            )
        return self.get_response(request)

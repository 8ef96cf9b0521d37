"""Request bodies over the limit are refused from their ``Content-Length``, unread.

Nothing before this middleware reads a body, and it answers before anything after it
can (the CSRF check and the NUL-byte guard parse form bodies, DRF its parsers):

- a body whose declared length is above ``DASHBOARD_MAX_BODY_BYTES`` gets 413;
- a request that is not signed in (no session, no valid API token or Basic
  credentials) may send at most ``DASHBOARD_ANONYMOUS_MAX_BODY_BYTES`` (a login form);
  a larger one gets 413;
- an API write with a body, without a session and without an ``Authorization``
  header, gets DRF's 403 at once (except the token endpoint, which signs in): its body
  is never parsed;
- a body sent without a length (chunked) gets 411: Django would read none of it.

The answer is JSON under ``/api/`` and a short HTML page elsewhere, naming the limit.
The web server (gunicorn) then discards the unread body or closes the connection.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# API paths whose bodies are read without a signed-in user: signing in itself
SIGN_IN_PATHS = frozenset({"/api/auth/token/"})
NOT_SIGNED_IN = "Authentication credentials were not provided."


def declared_length(request: HttpRequest) -> int | None:
    """The body length the client declared (0 without a body), or None when not given."""
    raw = request.META.get("CONTENT_LENGTH") or ""
    if not raw:
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        return None if chunked else 0
    try:
        return max(int(raw), 0)
    except ValueError:
        return None


def _credentials_valid(request: HttpRequest) -> bool:
    """Whether the request carries API credentials (token or Basic) that authenticate.

    Only asked for a body above the anonymous limit, so a password is hashed here only
    for such a request.
    """
    if not request.META.get("HTTP_AUTHORIZATION"):
        return False
    from rest_framework.authentication import BasicAuthentication, TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed

    for authenticator in (TokenAuthentication(), BasicAuthentication()):
        try:
            # DRF's authenticators read only request.META (and Django's authenticate())
            if authenticator.authenticate(request) is not None:  # type: ignore[arg-type]
                return True
        except AuthenticationFailed:
            return False
    return False


def is_signed_in(request: HttpRequest) -> bool:
    """A signed-in session, or API credentials that authenticate."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return True
    # DRF's test client (force_authenticate) marks the request so; no real request has it
    forced = getattr(request, "_force_auth_user", None)
    if forced is not None and forced.is_authenticated:
        return True
    return _credentials_valid(request)


def refusal(request: HttpRequest, status: int, message: str, limit: int | None) -> HttpResponse:
    """413/411 as JSON under /api/, as a short HTML page elsewhere."""
    if request.path_info.startswith("/api/"):
        body: dict[str, object] = {"detail": message}
        if limit is not None:
            body["limit_bytes"] = limit
        return JsonResponse(body, status=status)
    html = render_to_string("dashboard/body_refused.html", {"status": status, "message": message})
    return HttpResponse(html, status=status, content_type="text/html; charset=utf-8")


class BodyLimitMiddleware:
    """Refuses over-limit and length-less bodies before any code reads them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method not in BODY_METHODS:
            return self.get_response(request)
        length = declared_length(request)
        if length is None:
            return refusal(request, 411, "a request body needs a Content-Length header", limit=None)
        limit = int(settings.DASHBOARD_MAX_BODY_BYTES)
        anonymous = int(settings.DASHBOARD_ANONYMOUS_MAX_BODY_BYTES)
        # a request not signed in is told its own limit, whatever the length (the
        # signed-in limit means nothing to it)
        if length > min(limit, anonymous) and not is_signed_in(request):
            return refusal(
                request,
                413,
                f"request body of {length} bytes is larger than the limit of {anonymous} bytes "
                "for requests that are not signed in (DASHBOARD_ANONYMOUS_MAX_BODY_BYTES)",
                anonymous,
            )
        if length > limit:
            return refusal(
                request,
                413,
                f"request body of {length} bytes is larger than the limit of {limit} bytes "
                "(DASHBOARD_MAX_BODY_BYTES)",
                limit,
            )
        if (
            length
            and request.path_info.startswith("/api/")
            and request.path_info not in SIGN_IN_PATHS
            and not request.META.get("HTTP_AUTHORIZATION")
            and not is_signed_in(request)
        ):
            # DRF's own answer to a write without credentials, given before any parser
            # (or the NUL-byte guard) reads the body
            return JsonResponse({"detail": NOT_SIGNED_IN, "code": "not_authenticated"}, status=403)
        return self.get_response(request)

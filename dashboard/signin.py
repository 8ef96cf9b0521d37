"""Sign-in guards: credentials that cannot be a user's refused before they reach the
database, and the login throttle around django-axes.

Every sign-in path (the sign-in pages, ``/api/auth/token/``, HTTP Basic) goes through
``django.contrib.auth.authenticate()``, so one authentication backend refuses malformed
credentials for all of them (:class:`MalformedCredentialsBackend`, first in
``AUTHENTICATION_BACKENDS``); the token endpoint also names the field in a 400
(:func:`credential_problem`).

django-axes counts failed logins in the database per username and address (its own
limit, ``AXES_FAILURE_LIMIT``). :class:`LoginThrottleHandler` adds three wider limits
over the same rows within the cool-off window: failures from one address (any
username: guessing across accounts), failures for one username (any address: a
distributed guess at one account) and failures overall (a botnet spraying usernames
from many addresses). A limit reached answers 429 until the cool-off has passed.
"""

from __future__ import annotations

from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.conf import settings  # Django's settings with django-axes's defaults filled in
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username
from axes.models import AccessAttempt
from django.core.exceptions import PermissionDenied
from django.db.models import Sum
from django.http import HttpRequest

#: ``django.contrib.auth``'s ``User.username`` column holds this many characters.
USERNAME_MAX_CHARS = 150
#: No password is longer (hashing a megabyte-long one per request is a denial of service).
PASSWORD_MAX_CHARS = 4096

NUL = "\x00"


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def credential_problem(field: str, value: object) -> str | None:
    """What makes *value* unfit as the *field* (``username`` or ``password``) of a
    sign-in, or None when it may be checked against the users.

    >>> credential_problem("username", "ops"), credential_problem("username", "a\\x00")
    (None, 'contains a NUL byte (\\\\x00), which is not accepted')
    """
    if not isinstance(value, str):
        return "must be a string"
    limit = USERNAME_MAX_CHARS if field == "username" else PASSWORD_MAX_CHARS
    if len(value) > limit:
        return f"is too long: at most {limit} characters, not {len(value)}"
    if NUL in value:
        return "contains a NUL byte (\\x00), which is not accepted"
    if _has_lone_surrogate(value):
        return "contains a lone surrogate (U+D800 to U+DFFF), which is not text"
    return None


class MalformedCredentialsBackend:
    """Stops ``authenticate()`` for a username or password no user can have (too long,
    a NUL byte, a lone surrogate): counted as a failed login, never sent to the
    database or the password hasher.

    Not a ``BaseBackend``: without ``get_user`` it is never the backend a session
    remembers (as django-axes's own backend), so ``force_login`` skips it too."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: object = None,
        password: object = None,
        **kwargs: object,
    ) -> None:
        for field, value in (("username", username), ("password", password)):
            if value is not None and credential_problem(field, value) is not None:
                raise PermissionDenied(f"{field} is malformed")
        return None


def axes_username(request: HttpRequest, credentials: dict[str, Any] | None) -> str:
    """The username django-axes stores for a failed login: what was given, cut to the
    column's length, NUL bytes and lone surrogates escaped (``AXES_USERNAME_CALLABLE``)."""
    field = settings.AXES_USERNAME_FORM_FIELD
    value: object = (credentials or {}).get(field)
    if value is None:
        value = request.POST.get(field, "") if request.method == "POST" else ""
    text = str(value).replace(NUL, "\\x00")
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:USERNAME_MAX_CHARS]


def _failures(request: HttpRequest, **match: object) -> int:
    threshold = get_cool_off_threshold(request)
    rows = AccessAttempt.objects.filter(attempt_time__gte=threshold, **match)
    total = rows.aggregate(n=Sum("failures_since_start"))["n"]
    return int(total or 0)


def wider_limit_reached(request: HttpRequest, credentials: dict[str, Any] | None) -> bool:
    """Whether the address, the username (from any address) or everybody together had
    their limit of failed logins within the cool-off window."""
    limits: list[tuple[dict[str, object], int]] = [({}, settings.LOGIN_GLOBAL_FAILURE_LIMIT)]
    address = getattr(request, "axes_ip_address", None)
    if address:
        limits.append(({"ip_address": address}, settings.LOGIN_ADDRESS_FAILURE_LIMIT))
    username = get_client_username(request, credentials)
    if username:
        limits.append(({"username": username}, settings.LOGIN_USERNAME_FAILURE_LIMIT))
    return any(_failures(request, **match) >= int(limit) for match, limit in limits)


class LoginThrottleHandler(AxesDatabaseHandler):  # type: ignore[misc]  # axes is untyped
    """django-axes's database handler with the wider limits of :func:`wider_limit_reached`."""

    def is_locked(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> bool:
        if super().is_locked(request, credentials):
            return True
        return bool(settings.AXES_LOCK_OUT_AT_FAILURE) and wider_limit_reached(request, credentials)

    def user_login_failed(
        self,
        sender: object,
        credentials: dict[str, Any],
        request: HttpRequest | None = None,
        **kwargs: object,
    ) -> None:
        super().user_login_failed(sender, credentials, request, **kwargs)
        # the failure that reaches a wider limit locks the request out, as axes's own does
        if request is not None and self.is_locked(request, credentials):
            request.axes_locked_out = True  # type: ignore[attr-defined]  # axes's marker

"""Navigation context for every page: who is signed in, the scope in view, unread alerts."""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.models import Alert
from dashboard.pages import scope as scope_mod


def navigation(request: HttpRequest) -> dict[str, object]:
    """``scope``, ``scope_query`` and ``unread_alerts`` for the base layout.

    Anonymous visitors (the sign-in page) get an empty scope and no count.
    """
    if not request.user.is_authenticated:
        return {"scope": None, "scope_query": "", "unread_alerts": 0}
    scope = scope_mod.resolve(request)
    return {
        "scope": scope,
        "scope_query": scope.query(),
        "unread_alerts": Alert.objects.filter(acknowledged_at__isnull=True).count(),
        "is_staff": bool(request.user.is_staff),
    }

"""Navigation context for every page: who is signed in, the scope in view, unread alerts."""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.pages import scope as scope_mod
from dashboard.services.alerts import unread_in_view


def navigation(request: HttpRequest) -> dict[str, object]:
    """``scope``, ``scope_query`` and ``unread_alerts`` for the base layout.

    The unread count is of the cluster in view (and of alerts of no cluster), as its
    title says: another cluster's alerts are not this one's news.  Anonymous visitors
    (the sign-in page) get an empty scope and no count.
    """
    if not request.user.is_authenticated:
        return {"scope": None, "scope_query": "", "unread_alerts": 0}
    scope = scope_mod.resolve(request)
    return {
        "scope": scope,
        "scope_query": scope.query(),
        "unread_alerts": unread_in_view(scope.cluster),
        "is_staff": bool(request.user.is_staff),
    }

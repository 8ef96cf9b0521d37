"""Navigation context for every page: who is signed in, the scope in view, unread alerts."""

from __future__ import annotations

from django.http import HttpRequest

from dashboard.pages import scope as scope_mod
from dashboard.services.alerts import unread_in_view


def navigation(request: HttpRequest) -> dict[str, object]:
    """``scope``, ``scope_query`` and ``unread_alerts`` for the base layout.

    The unread count is of every cluster (of the queues the user may view), as the alert
    feed its badge leads to lists them; its title says how many of them concern the
    cluster in view (``unread_here``: its own and alerts of no cluster).  Anonymous
    visitors (the sign-in page) get an empty scope and no count.
    """
    if not request.user.is_authenticated:
        return {"scope": None, "scope_query": "", "unread_alerts": 0}
    scope = scope_mod.resolve(request)
    user = request.user
    return {
        "scope": scope,
        "scope_query": scope.query(),
        "unread_alerts": (unread := unread_in_view(None, user)),
        "unread_here": unread_in_view(scope.cluster, user) if unread and scope.cluster else unread,
        "is_staff": bool(request.user.is_staff),
    }

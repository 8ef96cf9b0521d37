"""Users of the tests: readers of every queue (the old viewer role under the queue ACLs)."""

from __future__ import annotations

from typing import Any


def reads_every_queue(user: Any) -> Any:
    """*user* with ``dashboard.view_every_queue`` (reads every queue, whatever the ACLs)."""
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(codename="view_every_queue"))
    return user

"""API permissions: reads for authenticated users, writes for staff only.

The API's default is now :class:`dashboard.access.api.QueueAclPermission` (the queue
ACLs); this class is kept for views that want the plain staff rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission

if TYPE_CHECKING:  # DRF loads this module while rest_framework.views is half imported
    from rest_framework.request import Request
    from rest_framework.views import APIView


class IsStaffOrReadOnly(BasePermission):
    """Authenticated users may read; only staff users may change anything."""

    message = "Writes need a staff user."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return True
        return bool(user.is_staff)

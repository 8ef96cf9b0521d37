"""Who acts: the user stored on a row (``None`` for anonymous or missing users)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

    UserLike = AbstractBaseUser | AnonymousUser | None


def stored_user(user: UserLike) -> Any:
    """The user to store on a row (``None`` for anonymous or missing users)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user

"""Who a user is at the organisation's identity provider (OpenID Connect sign-in)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SignInIdentity(models.Model):
    """The provider's account (issuer and subject) a dashboard user signs in as, and the
    groups its last sign-in brought (YuniKorn's groups for the queue ACLs).

    A user made by a sign-in through the provider has one; a local account has none
    (its Django groups are its YuniKorn groups), and the provider can never sign in as
    a local account of the same name.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="signin_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    groups = models.JSONField(default=list, blank=True)
    signed_in_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="signin_identity_unique"),
        ]
        permissions = [
            (
                "view_every_queue",
                "May read every queue of every partition, whatever the queue ACLs say",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} at {self.issuer}"

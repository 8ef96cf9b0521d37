"""REST API of alert routing: staff's routes, and each tenant's own routes of its queues.

Staff read and change every route.  Any other user reads and changes only the routes it
created (their ``owner``), whose ``queue`` must be one it may view; their deliveries
carry only alerts of queues the queue ACLs let the owner view when the alert is raised
(:func:`dashboard.alerting.delivery.routes_for`).

- ``/api/alert-routes/`` - routes; ``secret`` is write-only (omit to keep, ``""`` to
  clear) and answered as ``secret_state``.  ``POST /api/alert-routes/<id>/test/``
  queues a test delivery (202, the delivery row).
- ``/api/alert-deliveries/`` - the delivery log (read-only), filtered by ``route``,
  ``status``, ``alert`` and ``is_test``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import models as dm
from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.alerting import delivery
from dashboard.models.alerting import AlertDelivery, AlertRoute


class AlertRouteSerializer(serializers.ModelSerializer[AlertRoute]):
    cluster = serializers.SlugRelatedField(
        slug_field="name",
        queryset=dm.Cluster.objects.all(),
        required=False,
        allow_null=True,
        help_text="the cluster's name; null: every cluster",
    )
    secret = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=1024,
        help_text="webhook: the HMAC-SHA256 key (write-only): omit to keep, empty to clear",
    )
    secret_state = serializers.SerializerMethodField()
    owner: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="a tenant's route: its owner (set to the user creating it); null: staff's",
    )

    class Meta:
        model = AlertRoute
        fields = [
            "id",
            "name",
            "cluster",
            "queue",
            "owner",
            "kind",
            "min_level",
            "channel",
            "url",
            "secret",
            "secret_state",
            "email_to",
            "enabled",
            "rate_limit",
            "rate_window_seconds",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def get_secret_state(self, obj: AlertRoute) -> str:
        return "set" if obj.secret else "not set"

    def validate_queue(self, value: str) -> str:
        """A route of a user the queue ACLs restrict: a queue it may view (another
        tenant's and an unknown one refused alike, with 403)."""
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if value and user is not None and scoping.is_tenant(user):
            partitions = dm.Partition.objects.all()
            if not any(access_for(user, p).may_view(value) for p in partitions):
                raise scoping.QueueAccessDenied("You may not view this queue.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The model's own checks (a webhook needs a URL and a secret, ...), with the
        stored values for fields the request leaves out."""
        probe = AlertRoute(
            **{
                f: attrs.get(f, getattr(self.instance, f) if self.instance else None)
                for f in ("channel", "url", "email_to")
            },
            secret=attrs.get("secret", self.instance.secret if self.instance else ""),
        )
        probe.url = probe.url or ""
        probe.email_to = probe.email_to or ""
        try:
            probe.clean()
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs


class AlertDeliverySerializer(serializers.ModelSerializer[AlertDelivery]):
    route_name = serializers.CharField(source="route.name", read_only=True)

    class Meta:
        model = AlertDelivery
        fields = [
            "id",
            "alert",
            "route",
            "route_name",
            "is_test",
            "is_digest",
            "digest",
            "cause",
            "note",
            "status",
            "attempts",
            "next_attempt_at",
            "last_error",
            "response_status",
            "created_at",
            "sent_at",
        ]
        read_only_fields = fields


class AlertRouteViewSet(viewsets.ModelViewSet[AlertRoute]):
    """Where new alerts are sent: staff's routes, and each other user's own routes of
    the queues it may view (:data:`dashboard.access.api.OWN_ROWS`)."""

    queryset = AlertRoute.objects.select_related("cluster", "owner").order_by("name")
    serializer_class = AlertRouteSerializer
    filterset_fields = ["channel", "enabled", "kind", "min_level"]
    ordering_fields = ["name", "created_at"]

    def get_queryset(self) -> QuerySet[AlertRoute]:
        user = self.request.user
        rows = super().get_queryset()
        if user.is_staff or getattr(self, "detail", False):  # one row: 403 by owner
            return rows
        return rows.filter(owner=user.pk)

    def perform_create(self, serializer: serializers.BaseSerializer[AlertRoute]) -> None:
        user = self.request.user
        serializer.save(owner=None if user.is_staff else user)

    @extend_schema(request=None, responses={202: AlertDeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Queue a test delivery (a sample alert) over this route."""
        row = delivery.queue_test(self.get_object())
        return Response(AlertDeliverySerializer(row).data, status=status.HTTP_202_ACCEPTED)


class AlertDeliveryViewSet(viewsets.ReadOnlyModelViewSet[AlertDelivery]):
    """The delivery log: one row per alert and route, and the test deliveries (staff only)."""

    queryset = AlertDelivery.objects.select_related("route").order_by("-created_at", "-id")
    serializer_class = AlertDeliverySerializer

    def get_queryset(self) -> QuerySet[AlertDelivery]:
        user = self.request.user
        rows = super().get_queryset()
        if user.is_staff or getattr(self, "detail", False):  # one row: 403 by owner
            return rows
        return rows.filter(route__owner=user.pk)

    filterset_fields = ["route", "status", "alert", "is_test"]
    ordering_fields = ["created_at", "sent_at", "status"]

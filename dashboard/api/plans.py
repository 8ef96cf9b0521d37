"""``/api/plans/``: plan a proposed config (stores nothing), keep it, schedule it, hand it back.

``POST /api/plans/`` with a multipart ``file`` or a ``text`` field (form or JSON)
and ``partition`` (default ``default``) answers the plan's JSON
(:meth:`dashboard.planning.ConfigPlan.to_dict`); a config the scheduler would
refuse answers 400 with ``config`` naming the line and the plan's ``refusals``.
``keep`` stores a config version marked planned, ``schedule`` the quota
changes, ``handback`` answers the queues.yaml, ConfigMap and ``kubectl patch``.
A user the queue ACLs restrict (a tenant) may plan, hand back and schedule a config
whose changes touch only queues it administers (else 403, naming only the queues it
may view), and reads the plan without the names of the queues it cannot view;
keeping a planned config version (the whole partition's) needs a staff user.

``cluster`` and ``partition`` select the config in force and the snapshot; the
cluster may be left out while only one cluster has a partition so named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard import services
from dashboard.access.redaction import partition_redaction
from dashboard.sources.verdict import plan_verdict


class PlanRequestSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(
        required=False, help_text="the proposed queues.yaml or ConfigMap (or use text)"
    )
    text = serializers.CharField(
        required=False, trim_whitespace=False, help_text="the proposed config as text"
    )
    cluster = serializers.CharField(
        required=False,
        default=None,
        allow_null=True,
        help_text="the partition's cluster (needed when several clusters have one so named)",
    )
    partition = serializers.CharField(
        required=False,
        default=services.DEFAULT_PARTITION,
        help_text="selects the config in force and the latest snapshot",
    )


def _proposed(request: Request) -> tuple[bytes, str, dict[str, Any]]:
    """The proposed config's bytes, its file name and the cluster and partition, from the
    request."""
    services.check_upload_size("body", int(request.META.get("CONTENT_LENGTH") or 0))
    if not isinstance(request.data, Mapping):  # a JSON body of null, a list, a number...
        raise services.ServiceError("body", "must be a JSON object or form fields")
    body = PlanRequestSerializer(data=request.data)
    body.is_valid(raise_exception=True)
    f = body.validated_data.get("file")
    text = body.validated_data.get("text")
    if f is not None and text is not None:
        raise services.ServiceError("file", "send either a file or text, not both")
    if f is not None:
        services.check_upload_size(f.name or "file", f.size or 0)
        data, filename = f.read(), f.name or "queues.yaml"
    elif text is not None:
        data, filename = text.encode("utf-8", errors="surrogatepass"), "queues.yaml"
    else:
        raise services.ServiceError("file", "upload the proposed config as file or send it as text")
    if not data.strip():
        raise services.ServiceError("text", "the proposed config is empty")
    if body.validated_data["cluster"]:
        services.named_cluster(body.validated_data["cluster"])
    scope = {
        "partition": body.validated_data["partition"],
        "cluster": body.validated_data["cluster"] or None,
    }
    return data, filename, scope


class PlanViewSet(viewsets.ViewSet):
    """Config rollout plans: nothing is stored unless kept or scheduled (staff only)."""

    @extend_schema(
        request={
            "multipart/form-data": PlanRequestSerializer,
            "application/json": PlanRequestSerializer,
        },
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        description="Plan a proposed config against the partition's config in force and "
        "latest snapshot: changes, timers, firings in order, chained victims, totals.",
    )
    def create(self, request: Request) -> Response:
        data, filename, scope = _proposed(request)
        plan = services.plan_proposed_config(data, **scope, filename=filename, user=request.user)
        body = plan.to_dict()
        body["scheduler_verdict"] = plan_verdict(
            plan.parsed.text if plan.parsed is not None else data.decode("utf-8", "replace"),
            bool(plan.refusals),
            partition=str(scope["partition"]),
            cluster=scope.get("cluster"),
        )
        if plan.refusals:
            body["config"] = [
                f"{r.location}: {r.reason}" if r.location else r.reason for r in plan.refusals
            ]
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        _name_victims(body, scope)
        partition = services.find_partition(str(scope["partition"]), scope.get("cluster"))
        redaction = partition_redaction(request.user, partition) if partition else None
        # a tenant: nothing of the queues it cannot view (names of queues, pods, apps)
        return Response(redaction.json(body) if redaction is not None else body)

    @extend_schema(request=PlanRequestSerializer, responses={201: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def keep(self, request: Request) -> Response:
        """Keep the proposed config as a config version marked planned (not in force)."""
        data, filename, scope = _proposed(request)
        version = services.keep_planned_config(data, **scope, filename=filename, user=request.user)
        body = {"id": version.pk, "number": version.number, "planned": version.planned}
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=PlanRequestSerializer, responses={201: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def schedule(self, request: Request) -> Response:
        """Save the plan's changes of max and delay as quota changes (all or none)."""
        data, filename, scope = _proposed(request)
        result = services.schedule_planned_config(
            data, **scope, filename=filename, user=request.user
        )
        return Response(result.to_dict(), status=status.HTTP_201_CREATED)

    @extend_schema(request=PlanRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def handback(self, request: Request) -> Response:
        """The proposed config as queues.yaml, ConfigMap and kubectl patch (nothing stored)."""
        data, filename, scope = _proposed(request)
        result = services.planned_config_handback(
            data, **scope, filename=filename, user=request.user
        )
        return Response(result.to_dict())


def _name_victims(body: dict[str, Any], scope: dict[str, Any]) -> None:
    """Each victim's ``pod``, ``namespace`` and ``user`` beside its key, from the
    partition's newest snapshot (the one the plan read)."""
    details = [
        v
        for part in ("changes", "pending")
        for change in body.get(part) or []
        for v in change.get("victim_details") or []
        if isinstance(v, dict)
    ]
    if not details:
        return
    partition = services.find_partition(str(scope["partition"]), scope.get("cluster"))
    snapshot = (
        services.latest_snapshot(partition, defer_state=True) if partition is not None else None
    )
    names = services.allocation_names(snapshot, (str(v.get("key")) for v in details))
    for v in details:
        name = names.get(str(v.get("key"))) or services.AllocationName(str(v.get("key")))
        v.update(name.as_fields())

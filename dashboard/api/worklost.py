"""``GET /api/work-lost/``: the work lost to preemption per queue and per day or week.

The answer keeps the scheduler's raw quantities: ``lost`` and ``used`` are quantity times
seconds summed from the completed applications' ``resourceHistory`` (``vcore`` in
millicore-seconds, ``memory`` in byte-seconds, other types in count-seconds);
``observed_resources`` are the raw resources the observed victims held.  The page's CSV
(``/work-lost.csv``) gives the same rows in core-hours and GiB-hours.  See
:mod:`dashboard.services.history.work_lost`.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from dashboard import services
from dashboard.services.history import work_lost as wl

QUANTITY_SECONDS = serializers.DictField(
    child=serializers.IntegerField(),
    help_text="resource type -> quantity times seconds in the scheduler's units "
    "(vcore: millicore-seconds, memory: byte-seconds)",
)


class WorkLostQuerySerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        help_text="the partition's cluster (needed when several clusters have one so named)",
    )
    partition = serializers.CharField(
        required=False, default=services.DEFAULT_PARTITION, help_text="the partition's name"
    )
    period = serializers.ChoiceField(
        choices=wl.PERIODS,
        required=False,
        default="day",
        help_text="day (UTC) or week (ISO, from Monday)",
    )
    since = serializers.DateField(
        required=False, default=None, allow_null=True, help_text="first day counted (UTC)"
    )
    until = serializers.DateField(
        required=False, default=None, allow_null=True, help_text="last day counted (UTC)"
    )
    queue = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=1000,
        help_text="only this queue and the queues below it",
    )


class WorkLostRowSerializer(serializers.Serializer[Any]):
    period_start = serializers.DateField(help_text="the first day of the period (UTC)")
    queue = serializers.CharField(help_text="the application's (or victim's) leaf queue")
    completed_applications = serializers.IntegerField(
        source="applications", help_text="completed applications that finished in the period"
    )
    applications_with_lost_work = serializers.IntegerField(
        source="applications_with_loss",
        help_text="of those, the ones whose preemptedResource is not empty",
    )
    lost = QUANTITY_SECONDS
    used = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="their resourceUsage the same way: the work that was not lost",
    )
    observed_victims = serializers.IntegerField(
        help_text="allocations the scheduler preempted in the period (its events)"
    )
    observed_resources = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="the resources those victims held (raw quantities, not multiplied by time)",
    )


class WorkLostSerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField(source="partition.cluster.name")
    partition = serializers.CharField(source="partition.name")
    period = serializers.CharField()
    since = serializers.DateField(allow_null=True)
    until = serializers.DateField(allow_null=True)
    queue = serializers.CharField(help_text="the queue filter; empty for every queue")
    types = serializers.ListField(
        child=serializers.CharField(), help_text="the resource types with lost work"
    )
    totals = serializers.SerializerMethodField(help_text="lost quantity times seconds per type")
    rows = WorkLostRowSerializer(many=True)

    def get_totals(self, answer: wl.WorkLost) -> dict[str, int]:
        return answer.totals()


class WorkLostView(APIView):
    """The work lost to preemption in one partition, per queue and per day or week (one
    answer, not a list: an API view, not a viewset's list)."""

    @extend_schema(
        parameters=[WorkLostQuerySerializer],
        responses=WorkLostSerializer,
        description="Per period and leaf queue: the completed applications' "
        "resourceHistory.preemptedResource (lost) and resourceUsage (used), counted in "
        "the period they finished, and the observed preemptions' victims.",
    )
    def get(self, request: Request) -> Response:
        query = WorkLostQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        v = query.validated_data
        partition = services.find_partition(v["partition"], v["cluster"] or None)
        if partition is None:
            raise services.ServiceError(
                "partition", f"there is no partition {v['partition'][:60]!r}"
            )
        answer = wl.work_lost(
            partition,
            period=v["period"],
            since=v["since"],
            until=v["until"],
            queue=v["queue"],
            user=request.user,
        )
        return Response(WorkLostSerializer(answer).data)

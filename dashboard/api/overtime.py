"""``/api/queue-over-time/``: one queue's usage against its limits and its preemptions over time.

``GET /api/queue-over-time/?queue=root.a&start=...&end=...`` (``cluster`` and
``partition`` select the partition, as elsewhere) answers, for the window
``[start, end)`` (default: the whole UTC days of the partition's data), per resource type the
time-weighted mean used, the share of the guaranteed used and the time spent above
the max, a step series of used, allocated, guaranteed and max, the queue's
preemptions per UTC day (predicted and observed apart) and per node over the 48
hours before the window's end. Bad parameters answer 400 naming the parameter.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard.api.serializers import ResourceField
from dashboard.services.history.overtime import MAX_WINDOW
from dashboard.services.history.overtime_report import QueueOverTime, queue_over_time


class TypeFiguresSerializer(serializers.Serializer[Any]):
    type = serializers.CharField()
    mean_used = serializers.FloatField(
        help_text="time-weighted mean of used (allocated - preempting) over the covered time"
    )
    guaranteed_seconds = serializers.FloatField(help_text="time a guaranteed above 0 was defined")
    guaranteed_share = serializers.FloatField(
        allow_null=True,
        help_text="time-weighted share of the guaranteed used (0 to 1; usage above the "
        "guaranteed counts as all of it); null when no guaranteed was defined",
    )
    max_seconds = serializers.FloatField(help_text="time a max of this type was defined")
    above_max_seconds = serializers.FloatField(help_text="time used was above the max")


class SeriesPointSerializer(serializers.Serializer[Any]):
    at = serializers.DateTimeField(help_text="the step starts here and lasts until the next")
    used = ResourceField(help_text="allocated - preempting (resampled: the interval's highest)")
    allocated = ResourceField(help_text="as YuniKorn reports it (resampled: the highest)")
    guaranteed = ResourceField(allow_null=True)
    max = ResourceField(allow_null=True)
    present = serializers.BooleanField(help_text="false: the snapshot had no such queue")


class UsageSerializer(serializers.Serializer[Any]):
    covered_seconds = serializers.FloatField(
        help_text="time of the window with a snapshot holding the queue"
    )
    above_max_any_seconds = serializers.FloatField(
        help_text="time any type's used was above its max"
    )
    snapshots = serializers.IntegerField(help_text="snapshots whose span meets the window")
    until = serializers.DateTimeField(
        help_text="where the last span ends: the window's end or the data's end, whichever "
        "is first (the newest snapshot's figures hold no later)"
    )
    resampled_seconds = serializers.FloatField(
        allow_null=True,
        help_text="the series' interval when resampled (too many changes), else null",
    )
    types = TypeFiguresSerializer(many=True)
    series = SeriesPointSerializer(many=True)


class RunCountSerializer(serializers.Serializer[Any]):
    runs = serializers.IntegerField()
    victims = serializers.IntegerField()


class DaySerializer(serializers.Serializer[Any]):
    day = serializers.DateField(help_text="a UTC day")
    predicted = RunCountSerializer(help_text="the dashboard's own timers (nothing happened)")
    observed = RunCountSerializer(help_text="the scheduler's own preemptions, from its events")


class NodeSerializer(serializers.Serializer[Any]):
    node = serializers.CharField(help_text="empty: the node is not known")
    predicted = serializers.IntegerField(help_text="victims of predicted runs")
    observed = serializers.IntegerField(help_text="victims of observed runs")


class NodeWindowSerializer(serializers.Serializer[Any]):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    nodes = NodeSerializer(many=True)


class QueueOverTimeSerializer(serializers.Serializer[Any]):
    cluster = serializers.CharField()
    partition = serializers.CharField()
    queue = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    data_start = serializers.DateTimeField(
        allow_null=True, help_text="the first snapshot or predicted or observed run"
    )
    data_end = serializers.DateTimeField(
        allow_null=True,
        help_text="the newest snapshot's capture, a later run, or the live source's last "
        "successful poll (see data_end_by)",
    )
    data_end_by = serializers.CharField(help_text="snapshot, run, source, or empty: no data")
    usage = UsageSerializer()
    preemptions_per_day = DaySerializer(many=True)
    preemptions_per_node = NodeWindowSerializer(
        help_text="the 48 hours before the window's end (or now, when it ends later)"
    )


def answer(report: QueueOverTime) -> dict[str, object]:
    """The API's JSON of a queue over time."""
    usage = report.usage
    return {
        "cluster": report.partition.cluster.name,
        "partition": report.partition.name,
        "queue": report.queue,
        "start": usage.window.start,
        "end": usage.window.end,
        "data_start": report.data.start if report.data else None,
        "data_end": report.data.end if report.data else None,
        "data_end_by": report.data.end_by if report.data else "",
        "usage": {
            "covered_seconds": usage.covered_seconds,
            "above_max_any_seconds": usage.above_max_any_seconds,
            "snapshots": usage.snapshots,
            "until": usage.until,
            "resampled_seconds": usage.resampled_seconds,
            "types": usage.types,
            "series": usage.series,
        },
        "preemptions_per_day": report.days,
        "preemptions_per_node": {
            "start": report.node_window.start,
            "end": report.node_window.end,
            "nodes": report.nodes,
        },
    }


_TEXT = "ISO 8601 (e.g. 2026-11-01T00:00:00Z; UTC when no offset is given)"


class QueueOverTimeViewSet(viewsets.ViewSet):
    """One queue over a window of time (read-only; any signed-in user)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("queue", str, required=True, description="the queue's full path"),
            OpenApiParameter("partition", str, description="the partition (default: default)"),
            OpenApiParameter(
                "cluster", str, description="needed when several clusters have the partition"
            ),
            OpenApiParameter("start", str, description=f"window start, {_TEXT}"),
            OpenApiParameter(
                "end",
                str,
                description=f"window end (excluded; default now when start is given), {_TEXT}",
            ),
        ],
        responses={200: QueueOverTimeSerializer},
        description="The queue's usage against its guaranteed and max over [start, end) "
        "(default: the whole UTC days of the partition's data, from its first snapshot or "
        "run to the data's end; with start alone, up to now; with end alone, the 30 days "
        f"before it; at most {MAX_WINDOW.days} days), and its "
        "preemptions (victims taken from it or below it) per UTC day and per node over the "
        "48 hours before the window's end, predicted and observed apart.",
    )
    def list(self, request: Request) -> Response:
        params = request.query_params
        report = queue_over_time(
            queue=params.get("queue"),
            partition=params.get("partition"),
            cluster=params.get("cluster"),
            start=params.get("start"),
            end=params.get("end"),
        )
        return Response(QueueOverTimeSerializer(answer(report)).data)

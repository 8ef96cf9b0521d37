"""The API's filtersets: the query parameters of each resource's list."""

from __future__ import annotations

import django_filters

from dashboard import models
from dashboard.api.filters import ClusterFilter, IsoDateTimeFilter


class PartitionFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="cluster__name")

    class Meta:
        model = models.Partition
        fields = ["cluster", "name"]


class ConfigVersionFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")

    class Meta:
        model = models.ConfigVersion
        fields = ["cluster", "partition", "checksum"]


class SnapshotFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    captured_after = IsoDateTimeFilter(field_name="captured_at", lookup_expr="gte")
    captured_before = IsoDateTimeFilter(field_name="captured_at", lookup_expr="lte")

    class Meta:
        model = models.ClusterSnapshot
        fields = ["cluster", "partition", "source_kind"]


class RunFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    queue = django_filters.CharFilter(field_name="queue")
    queue_prefix = django_filters.CharFilter(field_name="queue", lookup_expr="startswith")
    queued_after = IsoDateTimeFilter(field_name="queued_at", lookup_expr="gte")
    queued_before = IsoDateTimeFilter(field_name="queued_at", lookup_expr="lte")
    victim = django_filters.CharFilter(field_name="victims__allocation_key", distinct=True)
    nature = django_filters.ChoiceFilter(
        choices=models.PreemptionRun.Nature.choices, method="filter_nature"
    )

    class Meta:
        model = models.PreemptionRun
        fields = ["kind", "trigger", "status", "outcome", "snapshot"]

    def filter_nature(
        self, queryset: models.PreemptionRunQuerySet, name: str, value: str
    ) -> models.PreemptionRunQuerySet:
        return queryset.of_nature(value)


class QuotaChangeFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    queue = django_filters.CharFilter(field_name="queue_path")
    queue_prefix = django_filters.CharFilter(field_name="queue_path", lookup_expr="startswith")
    planned = django_filters.BooleanFilter(
        field_name="applied_at",
        lookup_expr="isnull",
        label="true: made in the dashboard and not yet seen applied in the cluster's config",
    )

    class Meta:
        model = models.QuotaChange
        fields = ["state", "config_version", "clock_source", "learned"]


class AlertFilter(django_filters.FilterSet):
    cluster = ClusterFilter(field_name="partition__cluster__name")
    partition = django_filters.CharFilter(field_name="partition__name")
    acknowledged = django_filters.BooleanFilter(
        field_name="acknowledged_at", lookup_expr="isnull", exclude=True
    )
    created_after = IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")

    class Meta:
        model = models.Alert
        fields = ["level", "kind", "queue", "run", "change"]

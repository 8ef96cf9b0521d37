"""Django admin registrations (read-mostly views of the stored state).

Every process that sets Django up imports this module (the admin's autodiscovery),
so the services are imported where an admin action needs them, not at start.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from dashboard import models


@admin.register(models.Cluster)
class ClusterAdmin(admin.ModelAdmin[models.Cluster]):
    list_display = ["name", "cluster_id", "created_at"]


@admin.register(models.Partition)
class PartitionAdmin(admin.ModelAdmin[models.Partition]):
    list_display = [
        "name",
        "cluster",
        "quota_preemption_enabled",
        "miss",
        "timer_rules",
        "created_at",
    ]
    list_filter = ["cluster", "timer_rules"]

    def save_model(
        self, request: HttpRequest, obj: models.Partition, form: Any, change: bool
    ) -> None:
        # a new rule set derives the waiting deadlines again (the API's timer-rules action)
        rules = obj.timer_rules
        if change and "timer_rules" in form.changed_data:
            obj.timer_rules = models.Partition.objects.get(pk=obj.pk).timer_rules
            super().save_model(request, obj, form, change)
            from dashboard.services.quota.deadlines import set_timer_rules

            set_timer_rules(obj, rules, now=timezone.now())
            return
        super().save_model(request, obj, form, change)


@admin.register(models.ConfigVersion)
class ConfigVersionAdmin(admin.ModelAdmin[models.ConfigVersion]):
    list_display = [
        "partition",
        "number",
        "planned",
        "filename",
        "checksum",
        "imported_by",
        "imported_at",
    ]
    list_filter = ["partition", "planned"]


@admin.register(models.ClusterSnapshot)
class ClusterSnapshotAdmin(admin.ModelAdmin[models.ClusterSnapshot]):
    list_display = ["id", "partition", "source_kind", "captured_at", "imported_at"]
    list_filter = ["partition", "source_kind"]

    # nodes, applications and allocations are shared with the neighbouring snapshots:
    # what only the deleted ones held goes with them
    def delete_model(self, request: HttpRequest, obj: models.ClusterSnapshot) -> None:
        with transaction.atomic():
            partition_id = obj.partition_id
            super().delete_model(request, obj)
            from dashboard import services

            services.drop_unused_spans([partition_id])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            partitions = set(queryset.values_list("partition_id", flat=True))
            super().delete_queryset(request, queryset)
            from dashboard import services

            services.drop_unused_spans(partitions)


@admin.register(models.QuotaChange)
class QuotaChangeAdmin(admin.ModelAdmin[models.QuotaChange]):
    list_display = ["id", "partition", "queue_path", "state", "changed_at", "deadline"]
    list_filter = ["state", "partition"]
    search_fields = ["queue_path"]


class RunVictimInline(admin.TabularInline[models.RunVictim, models.PreemptionRun]):
    model = models.RunVictim
    extra = 0


@admin.register(models.PreemptionRun)
class PreemptionRunAdmin(admin.ModelAdmin[models.PreemptionRun]):
    list_display = ["id", "kind", "trigger", "status", "queue", "outcome", "queued_at"]
    list_filter = ["kind", "trigger", "status", "outcome"]
    search_fields = ["queue"]
    inlines = [RunVictimInline]


@admin.register(models.Alert)
class AlertAdmin(admin.ModelAdmin[models.Alert]):
    list_display = ["id", "level", "kind", "queue", "created_at", "acknowledged_at"]
    list_filter = ["level", "kind"]


class AlertRouteForm(forms.ModelForm[models.AlertRoute]):
    """The signing secret is write-only: never rendered; empty keeps the stored one."""

    secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="webhook: the HMAC-SHA256 key. Leave empty to keep the stored secret.",
    )

    class Meta:
        model = models.AlertRoute
        fields = ["name", "cluster", "kind", "min_level", "channel", "url", "secret", "email_to"]
        fields += ["enabled", "rate_limit", "rate_window_seconds"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.initial["secret"] = ""

    def clean_secret(self) -> str:
        value = str(self.cleaned_data.get("secret") or "")
        if not value and self.instance.pk is not None:
            return str(models.AlertRoute.objects.get(pk=self.instance.pk).secret)
        return value


@admin.register(models.AlertRoute)
class AlertRouteAdmin(admin.ModelAdmin[models.AlertRoute]):
    form = AlertRouteForm
    list_display = ["name", "channel", "cluster", "kind", "min_level", "enabled"]
    list_filter = ["channel", "enabled", "cluster"]


@admin.register(models.AlertDelivery)
class AlertDeliveryAdmin(admin.ModelAdmin[models.AlertDelivery]):
    list_display = ["id", "route", "alert", "is_test", "status", "attempts", "created_at"]
    list_filter = ["status", "route", "is_test"]
    readonly_fields = [f.name for f in models.AlertDelivery._meta.fields]

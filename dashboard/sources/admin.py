"""Admin for cluster sources: staff edit the connection; the token is write-only.

The token field is a password input that never renders the stored value; leaving
it empty keeps the stored token, ticking "clear token" removes it.  Lists and
detail pages show "set" / "not set".  The poll state is read-only.

Every process that sets Django up imports this module (the admin's autodiscovery),
so the sources' services are imported when a saved source needs them, not at start.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from dashboard.sources.models import ClusterSource, SourceSnapshot, validate_token


class ClusterSourceForm(forms.ModelForm[ClusterSource]):
    token = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        validators=[validate_token],
        help_text="Leave empty to keep the stored token.",
    )
    clear_token = forms.BooleanField(required=False, help_text="Remove the stored token.")

    class Meta:
        model = ClusterSource
        fields = [
            "name",
            "base_url",
            "cluster",
            "partition",
            "token",
            "clear_token",
            "use_state_dump",
            "verify_tls",
            "poll_interval",
            "enabled",
            "follow_stream",
            "reconcile_interval",
            "alert_after",
            "namespace",
            "configmap_name",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # never send the stored token back to the browser
        self.initial["token"] = ""
        # a form sent without it (an older page) keeps the stored interval
        self.fields["reconcile_interval"].required = False

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("reconcile_interval") is None and "reconcile_interval" not in self.errors:
            data["reconcile_interval"] = self.instance.reconcile_interval
        if data.get("clear_token"):
            data["token"] = ""
        elif not data.get("token") and self.instance.pk is not None:
            data["token"] = ClusterSource.objects.get(pk=self.instance.pk).token
        return data


@admin.register(ClusterSource)
class ClusterSourceAdmin(admin.ModelAdmin[ClusterSource]):
    form = ClusterSourceForm
    list_display = [
        "name",
        "base_url",
        "cluster",
        "partition",
        "enabled",
        "poll_interval",
        "status",
        "failing_since",
        "last_success_at",
        "token_display",
    ]
    list_filter = ["enabled", "status", "cluster"]
    search_fields = ["name", "cluster__name", "partition", "base_url"]
    readonly_fields = [
        "token_display",
        "status",
        "failing_since",
        "last_error",
        "last_error_at",
        "consecutive_failures",
        "last_success_at",
        "last_poll_at",
        "last_changed_at",
        "last_snapshot",
        "alerted_at",
        "next_poll_at",
        "last_full_poll_at",
        "last_cycle",
    ]
    actions = ["poll_now"]

    @admin.display(description="token")
    def token_display(self, obj: ClusterSource) -> str:
        return obj.token_state

    def save_model(self, request: HttpRequest, obj: ClusterSource, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change:
            from dashboard.sources import services

            services.source_saved(obj, set(form.changed_data))

    @admin.action(description="Poll the selected sources now")
    def poll_now(self, request: HttpRequest, queryset: QuerySet[ClusterSource]) -> None:
        from dashboard.sources.tasks import poll_cluster_source

        for source in queryset:
            poll_cluster_source.delay(source.pk, True)
        messages.info(request, f"{queryset.count()} poll(s) queued.")


@admin.register(SourceSnapshot)
class SourceSnapshotAdmin(admin.ModelAdmin[SourceSnapshot]):
    list_display = ["source", "snapshot", "fetched_at", "fingerprint"]
    list_filter = ["source"]
    readonly_fields = ["source", "snapshot", "fetched_at", "fingerprint"]

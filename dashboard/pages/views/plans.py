"""The plan page: a proposed config (pasted, uploaded or the current one edited) planned
against the partition's config in force and latest snapshot, then kept, handed back or
scheduled.

Every signed-in user sees the page; planning (which stores nothing), handing back,
keeping the config as a planned version and scheduling its changes are POSTs and
need a staff user (checked here, whatever the page shows), except planning: a user
the queue ACLs restrict (a *tenant*) administering some queue plans a config whose
changes touch only queues it administers, in the partitions where it administers
one, and reads the answer with the names of the queues it cannot view (and of the
pods, applications and asks in them) replaced by ``(hidden)``, as the API's.  Forms
carry Django's CSRF token.
"""

from __future__ import annotations

import contextlib
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods

from dashboard import models, services
from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.access.redaction import partition_redaction
from dashboard.charts import plans as plan_charts
from dashboard.pages import scope as scope_mod
from dashboard.planning import ConfigPlan, Totals, Victim, describe_change
from dashboard.sources.verdict import plan_verdict

ACTIONS = ("plan", "keep", "schedule", "handback")


class _PartitionChoice(forms.ChoiceField):
    """``cluster/partition``; a bare partition name while one cluster has it (old links)."""

    def valid_value(self, value: Any) -> bool:
        if super().valid_value(value):
            return True
        text = str(value)
        matches = [k for k in self._values() if k.endswith(f"/{text}")]
        return "/" not in text and len(matches) == 1

    def _values(self) -> list[str]:
        return [str(k) for k, _ in self.choices]  # type: ignore[union-attr,misc]  # a list here


class PlanForm(forms.Form):
    partition = _PartitionChoice(label="Cluster / partition")
    text = forms.CharField(
        label="Proposed config (queues.yaml or the ConfigMap)",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false", "class": "mono"}),
    )
    file = forms.FileField(
        label="…or upload it",
        required=False,
        help_text="An uploaded file replaces the text above.",
    )

    def __init__(self, *args: Any, partitions: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["partition"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(p, p) for p in partitions]


def _scoped(value: str) -> tuple[str | None, str]:
    """``cluster/partition`` (the form's choice) as (cluster, partition); a bare name has
    no cluster."""
    cluster, _, partition = value.rpartition("/")
    return cluster or None, partition


def _scope_query(choice: str) -> str:
    """``cluster=..&partition=..`` of a ``cluster/partition`` choice (the pages' scope)."""
    cluster, partition = _scoped(choice)
    return urlencode(
        {"cluster": cluster, "partition": partition} if cluster else {"partition": partition}
    )


def _config_text(choice: str) -> str:
    cluster, partition = _scoped(choice)
    try:
        row = services.find_partition(partition, cluster)
    except services.ServiceError:
        row = None
    version = services.latest_config(row) if row is not None else None
    return services.editable_config_text(version) if version is not None else ""


#: The victims of one firing the plan page lists (the API lists them all).
VICTIMS_LISTED = 200


def _changes_view(plan: ConfigPlan) -> list[dict[str, object]]:
    outcomes = plan_charts.queue_outcomes(plan)
    out = []
    for change in (*plan.changes, *plan.pending):
        key, text = outcomes.get(change.queue, ("changed", "changed"))
        out.append(
            {
                "c": change,
                "text": describe_change(change),
                "outcome": plan_charts.OUTCOMES[key],
                "outcome_text": text,
            }
        )
    return out


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def plan_page(request: HttpRequest) -> HttpResponse:
    partitions = [
        f"{cluster}/{name}"
        for cluster, name in models.Partition.objects.order_by("cluster__name", "name").values_list(
            "cluster__name", "name"
        )
    ]
    tenant = scoping.is_tenant(request.user)
    if tenant:  # the partitions where the user administers a queue
        partitions = _administered(request.user, partitions)
    context: dict[str, Any] = {
        "title": "Plan a config",
        "partitions": partitions,
        "plan_tenant": tenant,
    }
    if request.method != "POST":
        partition = request.GET.get("partition") or ""
        if request.GET.get("cluster") and "/" not in partition:
            partition = f"{request.GET['cluster']}/{partition}"
        if partition and "/" not in partition:  # a bare name: its first cluster
            partition = next((p for p in partitions if p.endswith(f"/{partition}")), partition)
        partition = partition or (partitions[0] if partitions else "default")
        # the config in force names every tenant's queues and users: staff's to edit
        edit = request.GET.get("edit") == "current" and not tenant
        text = _config_text(partition) if edit else ""
        form = PlanForm(initial={"partition": partition, "text": text}, partitions=partitions)
        context["form"] = form
        context["edit_query"] = _scope_query(partition)
        return render(request, "dashboard/plan.html", context)

    action = request.POST.get("action", "plan")
    if action not in ACTIONS:
        action = "plan"
    if not request.user.is_staff and (action != "plan" or not tenant):
        raise PermissionDenied("Only staff users can hand back, keep or schedule a config.")
    form = PlanForm(request.POST, request.FILES, partitions=partitions)
    context["form"] = form
    context["edit_query"] = _scope_query(request.POST.get("partition", ""))
    if not form.is_valid():
        return render(request, "dashboard/plan.html", context, status=400)
    choice = form.cleaned_data["partition"]
    cluster, partition = _scoped(choice)
    scope: dict[str, Any] = {"cluster": cluster, "partition": partition}
    with contextlib.suppress(services.ServiceError):  # an unknown one: the plan says so
        row = services.find_partition(partition, cluster)
        if row is not None:  # the top bar and its links show the partition planned
            scope_mod.pin(request, row)
    context["plan_where"] = choice
    upload = form.cleaned_data.get("file")
    filename = "queues.yaml"
    if upload is not None:
        services.check_upload_size(upload.name or "file", upload.size or 0)
        data: bytes = upload.read()
        filename = upload.name or filename
        try:  # show what was uploaded, so that the actions below send the same config
            shown = {**request.POST.dict(), "text": data.decode("utf-8")}
        except UnicodeDecodeError:
            shown = None
        if shown is not None:
            form = PlanForm(shown, partitions=partitions)
            form.is_valid()
            context["form"] = form
    else:
        data = form.cleaned_data["text"].encode("utf-8", errors="surrogatepass")
    if not data.strip():
        form.add_error("text", "Paste a config, upload a file or edit the current one.")
        return render(request, "dashboard/plan.html", context, status=400)
    user = request.user
    try:
        if action == "keep":
            version = services.keep_planned_config(data, **scope, filename=filename, user=user)
            messages.success(
                request,
                f"Kept as config v{version.number} of {choice}, marked planned: it is "
                "not the config in force.",
            )
            return redirect(reverse("config", args=[version.pk]))
        if action == "schedule":
            result = services.schedule_planned_config(data, **scope, filename=filename, user=user)
            waiting = sum(1 for c in result.changes if c.state == models.QuotaChange.State.WAITING)
            skipped = "; ".join(result.not_scheduled)
            note = f" Not scheduled: {skipped}." if skipped else ""
            messages.success(
                request,
                f"Scheduled {len(result.changes)} quota change(s) in {choice}, "
                f"{waiting} with a timer.{note}",
            )
            query = urlencode({"cluster": cluster or "", "partition": partition})
            return redirect(f"{reverse('changes')}?{query}")
        plan = services.plan_proposed_config(
            data, **scope, filename=filename, user=user if tenant else None
        )
        if action == "handback" and not plan.refusals:
            context["handback"] = services.planned_config_handback(data, **scope, filename=filename)
    except services.ServiceError as exc:
        form.add_error(None, exc.message)
        too_large = isinstance(exc, services.UploadTooLarge | services.OverLimit)
        return render(request, "dashboard/plan.html", context, status=413 if too_large else 400)
    by_leaf: dict[str, list[Victim]] = {}
    for firing in plan.firings:
        for v in firing.victims:
            by_leaf.setdefault(v.queue, []).append(v)
    # the plan reads the partition's newest snapshot: its pods and users name the victims
    planned = services.find_partition(partition, cluster) if plan.firings else None
    context["names"] = services.allocation_names(
        services.latest_snapshot(planned, defer_state=True) if planned is not None else None,
        (v.key for firing in plan.firings for v in firing.victims[:VICTIMS_LISTED]),
    )
    context.update(
        plan=plan,
        verdict=plan_verdict(
            plan.parsed.text if plan.parsed is not None else data.decode("utf-8", "replace"),
            bool(plan.refusals),
            partition=partition,
            cluster=cluster,
        ),
        changes=_changes_view(plan),
        totals=plan.totals(),
        leaf_totals=[(leaf, Totals.of(vs)) for leaf, vs in sorted(by_leaf.items())],
        outcomes=list(plan_charts.OUTCOMES.values()),
    )
    if not plan.refusals:
        context["tree_figure"] = plan_charts.plan_tree_figure(plan)
        if plan.firings:
            context["timeline_figure"] = plan_charts.plan_timeline_figure(plan)
    if tenant:  # the answer as the API's: no name of a queue the user cannot view
        row = services.find_partition(partition, cluster)
        redaction = partition_redaction(user, row) if row is not None else None
        for name in ("tree_figure", "timeline_figure"):  # their JSON escapes "<" and ">"
            if redaction is not None and context.get(name) is not None:
                context[name] = redaction.json(context[name])
        html = render_to_string("dashboard/_plan_answer.html", context, request=request)
        context["plan_answer_html"] = mark_safe(  # escaped by the template
            redaction.text(html) if redaction is not None else html
        )
    return render(request, "dashboard/plan.html", context)


def _administered(user: Any, choices: list[str]) -> list[str]:
    """Of *choices* (``cluster/partition``), those where *user* administers a queue."""
    out = set()
    for row in models.Partition.objects.select_related("cluster"):
        if scoping.granted_roots(access_for(user, row), administer=True):
            out.add(f"{row.cluster.name}/{row.name}")
    return [c for c in choices if c in out]

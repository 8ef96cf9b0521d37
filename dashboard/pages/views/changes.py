"""Scheduled quota changes: list, create, detail, edit, cancel."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import (
    require_GET,
    require_http_methods,
    require_POST,
    require_safe,
)

from dashboard import display, models, services
from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.access.redaction import RowRedactions
from dashboard.pages import data, forms
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.common import (
    RUN_ACTIVE,
    administrator_required,
    next_url,
    scoped_url,
)
from dashboard.services.quota.deadlines import describe as describe_deadline


@login_required
@require_GET
def changes(request: HttpRequest) -> HttpResponse:
    """Scheduled quota changes with a live countdown per waiting change."""
    return _changes_page(request, None)


def _changes_page(request: HttpRequest, form: forms.ChangeForm | None) -> HttpResponse:
    """The changes list and the "schedule a change" form (*form*: one refused, to correct)."""
    scope = scope_mod.resolve(request)
    state = request.GET.get("state", "")
    rows = models.QuotaChange.objects.select_related("created_by", "run", "partition")
    rows = scoping.filter_viewable(rows, request.user, "queue_path")
    if scope.partition is not None:
        rows = rows.filter(partition=scope.partition)
    if state == "active":
        rows = rows.filter(state__in=models.QuotaChange.ACTIVE_STATES)
    elif state:
        rows = rows.filter(state=state)
    queue = request.GET.get("queue", "").strip()
    if queue:
        rows = rows.filter(data.subtree_filter("queue_path", queue))
    rows = rows.order_by("-changed_at", "-id")
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    hidden = RowRedactions(request.user)
    for change in page:  # a tenant: no name of a queue it cannot view (never saved)
        change.reason = hidden.text(change.reason, change.run, change.partition)
    active = (
        models.QuotaChange.objects.filter(state__in=models.QuotaChange.ACTIVE_STATES).exists()
        or models.PreemptionRun.objects.filter(status__in=RUN_ACTIVE).exists()
    )
    paths = data.all_paths(scope.snapshot) if scope.snapshot else []
    limits = limits_in_force(scope, planned=True)
    viewable = _viewable(request, scope, [*paths, *limits])
    return render(
        request,
        "dashboard/changes.html",
        {
            "title": "Scheduled changes",
            "changes": page,
            "state": state,
            "queue": queue,
            "states": models.QuotaChange.State.choices,
            "live_active": active,
            "form": form or _new_change_form(request, scope),
            "paths": [p for p in paths if p in viewable],
            "limits": {p: v for p, v in limits.items() if p in viewable},
        },
    )


def _viewable(request: HttpRequest, scope: scope_mod.Scope, paths: Iterable[str]) -> set[str]:
    """Of *paths*, those of queues the user may view in the scope's partition."""
    if not scoping.is_tenant(request.user):
        return set(paths)
    access = access_for(request.user, scope.partition)
    return {p for p in paths if access.may_view(p)}


def _new_change_form(request: HttpRequest, scope: scope_mod.Scope) -> forms.ChangeForm:
    """The "schedule a change" form, at ``?queue=`` with the max in force there."""
    types = known_types(scope)
    queue = request.GET.get("queue", "").strip()
    if scope.partition is None or not queue:
        return forms.ChangeForm(types=types)
    if scoping.is_tenant(request.user) and not access_for(request.user, scope.partition).may_view(
        queue
    ):
        return forms.ChangeForm(types=types)  # as an unknown queue: nothing of another's
    current = services.queue_settings(scope.partition, queue, planned=True)
    if not current.is_known:
        return forms.ChangeForm(types=types)
    return forms.ChangeForm.for_queue(
        queue, current.max, types, current_max_of(scope.partition, planned=True)
    )


def current_max_of(partition: models.Partition, *, planned: bool = False) -> forms.CurrentMax:
    """The max in force of a queue of *partition*: the scheduler's (its config, then the
    changes the cluster made or applied); with *planned*, the administrator's plan as it
    stands (the changes planned here too), which the change forms edit and the
    scheduling service decides a new change against.

    Each queue is read once per call of this function (one request: a form's
    checks and the answer it shows ask for the same queue).
    """
    read: dict[str, dict[str, int] | None] = {}

    def current(queue: str) -> dict[str, int] | None:
        if queue not in read:
            found = services.queue_settings(partition, queue, planned=planned).max
            read[queue] = dict(found) if found is not None else None
        value = read[queue]
        return dict(value) if value is not None else None

    return current


def limits_in_force(
    scope: scope_mod.Scope, *, planned: bool = False
) -> dict[str, dict[str, dict[str, str]]]:
    """Per queue and type, the max in force as the form types it and as text (for the forms);
    *planned* as :func:`current_max_of`."""
    if scope.partition is None or scope.snapshot is None:
        return {}
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path, settings in services.settings_by_queue(
        scope.partition, scope.snapshot, planned=planned
    ).items():
        out[path] = _limit_texts(settings.max or {})
    return out


def known_types(scope: scope_mod.Scope) -> list[str]:
    if scope.snapshot is None:
        return ["vcore", "memory"]
    return data.known_types(scope.snapshot)


@require_POST
@administrator_required
def change_create(request: HttpRequest) -> HttpResponse:
    """Schedule a change of a queue's max / delay (from the what-if plan or the form)."""
    scope = scope_mod.resolve(request)
    if scope.partition is None:
        raise Http404("no partition")
    form = forms.ChangeForm(
        request.POST,
        types=known_types(scope),
        current_max=current_max_of(scope.partition, planned=True),
    )
    if not form.is_valid():
        if not request.POST.get("next"):  # the changes page's own form: show it to correct
            return _changes_page(request, form)
        messages.error(request, form.error_text())
        return redirect(next_url(request, scoped_url("changes", request)))
    try:
        change = services.schedule_quota_change(
            scope.partition,
            form.cleaned_data["queue"],
            user=request.user,
            snapshot=scope.snapshot,
            **form.change_kwargs(),
        )
    except services.ServiceError as exc:
        if not request.POST.get("next"):  # the changes page's own form: kept, to correct
            form.add_error(None, exc.message)
            return _changes_page(request, form)
        messages.error(request, exc.message)
        return redirect(next_url(request, scoped_url("changes", request)))
    messages.success(request, change_message(change))
    return redirect(scoped_url("changes", request, highlight=change.pk))


def change_message(change: models.QuotaChange) -> str:
    """The flash after saving: the max old → new per type, then the timer."""
    limits = ""
    if change.old_max != change.new_max:
        limits = f" ({forms.max_changes_text(change.old_max, change.new_max)})"
    return _timer_message(change).replace(
        f"for {change.queue_path}", f"for {change.queue_path}{limits}", 1
    )


def _timer_message(change: models.QuotaChange) -> str:
    if change.state == models.QuotaChange.State.WAITING and change.deadline:
        planned = (
            " It is planned: the timer is the dashboard's prediction until a config from the "
            "cluster shows the change."
            if change.is_planned
            else ""
        )
        return (
            f"Change {change.pk} for {change.queue_path} scheduled: the timer fires at "
            f"{change.deadline:%Y-%m-%d %H:%M:%S} UTC.{planned}"
        )
    return (
        f"Change {change.pk} for {change.queue_path} saved: {display.humanize_text(change.reason)}"
    )


@login_required
@require_safe
def change_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One scheduled change: its timer, what it replaced, the run it led to, its config patch."""
    change = get_object_or_404(
        models.QuotaChange.objects.select_related(
            "partition__cluster", "created_by", "run", "superseded_by", "config_version", "snapshot"
        ),
        pk=pk,
    )
    scope_mod.pin(request, change.partition, change.snapshot)
    in_force = services.queue_settings(change.partition, change.queue_path)
    return render(
        request,
        "dashboard/change.html",
        {
            "title": f"Change {change.pk}",
            "change": change,
            "in_force": in_force,
            "in_force_words": display.IN_FORCE_WORDS.get(in_force.source, in_force.source),
            "supersedes": change.supersedes.order_by("-changed_at", "-id"),
            "alert_rows": change.alerts.order_by("-created_at", "-id"),
            "live_active": change.state in models.QuotaChange.ACTIVE_STATES,
            "deadline_words": describe_deadline(change),
        },
    )


@administrator_required
@require_http_methods(["GET", "HEAD", "POST"])
def change_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Edit a waiting change: saving (confirmed) records a further change of the queue,
    which moves the timer by the partition's timer rules (restarts it under ``seed``)."""
    change = get_object_or_404(models.QuotaChange.objects.select_related("partition"), pk=pk)
    scope = scope_mod.pin(request, change.partition)
    types = known_types(scope)
    if change.state != models.QuotaChange.State.WAITING:
        messages.error(
            request,
            f"Change {change.pk} is {change.get_state_display().lower()}: "
            "only a waiting change can be edited.",
        )
        return redirect(scoped_url("changes", request))
    if request.method == "POST":
        form = forms.ChangeForm(
            request.POST,
            types=types,
            confirm=True,
            current_max=current_max_of(change.partition, planned=True),
            rules=change.partition.timer_rules,
        )
        if form.is_valid():
            try:
                new = services.schedule_quota_change(
                    change.partition,
                    change.queue_path,
                    user=request.user,
                    **form.change_kwargs(),
                )
            except services.ServiceError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, change_message(new))
                return redirect(scoped_url("changes", request, highlight=new.pk))
    else:
        form = forms.ChangeForm.for_change(
            change, types, current_max_of(change.partition, planned=True)
        )
    in_force = current_max_of(change.partition, planned=True)(change.queue_path) or {}
    return render(
        request,
        "dashboard/change_edit.html",
        {
            "title": f"Edit change {change.pk}",
            "change": change,
            "form": form,
            "timer_rules": change.partition.timer_rules,
            # what the form's "change" column compares the new max with (as on the list page)
            "limits": {change.queue_path: _limit_texts(in_force)},
        },
    )


def _limit_texts(limits: Mapping[str, int]) -> dict[str, dict[str, str]]:
    """Per type, a max as the form types it and as text."""
    return {
        t: {"input": forms.limit_input(t, q), "text": display.format_quantity(t, q)}
        for t, q in limits.items()
    }


@require_POST
@administrator_required
def change_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Cancel a waiting change: its timer stops and the current max stays."""
    change = get_object_or_404(models.QuotaChange, pk=pk)
    try:
        services.cancel_quota_change(change, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Change {change.pk} for {change.queue_path} cancelled.")
    return redirect(next_url(request, scoped_url("changes", request)))

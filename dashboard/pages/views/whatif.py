"""The what-if page: a preemption for an ask, or a quota change, evaluated as a run."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.serializers.json import DjangoJSONEncoder
from django.http import (
    HttpRequest,
    HttpResponse,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import (
    require_GET,
    require_http_methods,
)

from dashboard import models, services
from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.access.pages import DENIED
from dashboard.access.redaction import run_redaction
from dashboard.importers import quantities
from dashboard.pages import data, forms
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.changes import current_max_of, known_types, limits_in_force
from dashboard.pages.views.common import RUN_ACTIVE, int_param, no_snapshot, scoped_url
from dashboard.pages.views.run_redaction import redact_run_page
from dashboard.pages.views.runs import (
    elapsed,
    fire_time,
    round_ask_pods,
    run_figures,
    victim_gang,
    victim_names,
    victim_places,
)
from dashboard.pages.warm import warm_in_background, warm_workers

#: Victims listed in a what-if answer (the rest are counted, and listed on the run's page).
VICTIMS_SHOWN = 100


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def whatif(request: HttpRequest) -> HttpResponse:
    """Ask the engine: a pending or typed ask, or a queue with a lower max."""
    started = time.perf_counter()
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return no_snapshot(request, "What-if")
    snapshot = scope.snapshot
    types = known_types(scope)
    leaves = data.leaf_paths(snapshot)
    paths = data.all_paths(snapshot)
    asks = list(snapshot.asks.order_by("queue", "key"))
    tenant = scoping.is_tenant(request.user)
    access = access_for(request.user, snapshot.partition) if tenant else None
    if access is not None:  # a queue administrator: its own asks and queues only
        asks = [a for a in asks if access.may_administer(a.queue)]
        leaves = [p for p in leaves if access.may_administer(p)]
        paths = [p for p in paths if access.may_administer(p)]
    run_id = int_param(request.GET.get("run"))
    run = (
        models.PreemptionRun.objects.select_related("snapshot", "partition")
        .defer("snapshot__scenario")
        .filter(pk=run_id)
        .first()
        if run_id
        else None
    )
    if run is not None and tenant and not scoping.may_view_run(request.user, run):
        raise PermissionDenied(DENIED)  # as an unknown run: nothing of another tenant
    current_max = current_max_of(snapshot.partition)
    # the forms as the page shows them; a post builds only the form it was sent by
    preempt_form: forms.PreemptForm | None = None
    quota_form: forms.QuotaForm | None = None
    if request.method == "GET" and run is None:
        # the answer to come explains its victims with the snapshot's engine state:
        # build it in this web process while the form is being filled
        warm_in_background(snapshot)
        warm_workers(snapshot)  # and in the workers, which answer it
    # both forms have a "queue" field: distinct element ids keep labels and tests unambiguous
    if request.method == "POST":
        if not scoping.administers_any_queue(request.user):
            raise PermissionDenied("Only staff and queue administrators can run what-ifs.")
        kind = request.POST.get("kind")
        form: forms.PreemptForm | forms.QuotaForm | None = None
        try:
            if kind == "preempt":
                form = preempt_form = forms.PreemptForm(
                    request.POST, asks=asks, leaves=leaves, types=types
                )
                run_kind = models.PreemptionRun.Kind.WHATIF_PREEMPT
            elif kind == "quota":
                form = quota_form = forms.QuotaForm(
                    request.POST, paths=paths, types=types, current_max=current_max
                )
                run_kind = models.PreemptionRun.Kind.WHATIF_QUOTA
            else:
                messages.error(request, "Choose a what-if: a pending ask or a quota decrease.")
            if form is not None and form.is_valid():
                run = services.create_run(
                    kind=run_kind,
                    snapshot=snapshot,
                    request=form.run_request(),
                    user=request.user,
                    trigger=models.PreemptionRun.Trigger.MANUAL,
                )
                asked = time.perf_counter()
                # a warm worker answers in well under a second: wait for it here, so the
                # answer comes back at once (else the page long-polls for it)
                services.wait_for_run(run.pk, settings.DASHBOARD_WHATIF_WAIT_SECONDS)
                waited = time.perf_counter()
                if _wants_answer(request):  # the page's script: the answer alone
                    response = _answer_response(request, run.pk, current_max)
                    # where the time went, for the browser's developer tools and benchmarks
                    response["Server-Timing"] = ", ".join(
                        f"{name};dur={ms * 1000:.1f}"
                        for name, ms in (
                            ("ask", asked - started),
                            ("wait", waited - asked),
                            ("answer", time.perf_counter() - waited),
                        )
                    )
                    return response
                return redirect(scoped_url("whatif", request, run=run.pk))
        except services.ServiceError as exc:
            if form is not None:
                form.add_error(None, f"{exc.field}: {exc.message}")
    if preempt_form is None:
        preempt_form = forms.PreemptForm(
            asks=asks, leaves=leaves, types=types, initial=_preempt_initial(run, asks)
        )
    if quota_form is None:
        quota_form = forms.QuotaForm(
            paths=paths,
            types=types,
            initial=_quota_initial(request, run, types),
            current_max=current_max,
        )
    context: dict[str, object] = {
        "title": "What-if",
        "preempt_form": preempt_form,
        "quota_form": quota_form,
        "asks": asks,
        "run": run,
        "types": types,
        "limits": {
            p: v for p, v in limits_in_force(scope).items() if access is None or access.may_view(p)
        },
    }
    if run is not None:
        context.update(answer_context(request, run, types, current_max))
    return render(request, "dashboard/whatif.html", context)


#: The answer's figures, by the id of the element that draws them (data-figure).
ANSWER_FIGURES = {
    "plan-figure": "plan_figure",
    "run-tree-figure": "tree_figure",
    "run-nodes-figure": "nodes_figure",
}


def answer_context(
    request: HttpRequest,
    run: models.PreemptionRun,
    types: Sequence[str],
    current_max: forms.CurrentMax,
) -> dict[str, object]:
    """What ``_whatif_answer.html`` shows of *run*: outcome, victims, alerts, figures."""
    # the answer lists the first victims (a quota what-if can plan hundreds);
    # the run's page lists them all, the figures highlight them all
    places = victim_places(run)
    context: dict[str, object] = {
        "run": run,
        "live_active": run.status in RUN_ACTIVE,
        "answer_location": scoped_url("whatif", request, run=run.pk),
        "victims": list(run.victims.order_by("position")[:VICTIMS_SHOWN]) if places else [],
        "victim_total": len(places),
        "needed": services.explain_run_victims(run) if places else {},
        "gang": victim_gang(run, places),
        "names": victim_names(run, places),
        "ask_pods": round_ask_pods(run),
        "elapsed": elapsed(run),
        "fire": fire_time(run),
    }
    if run.status == models.PreemptionRun.Status.DONE:
        context["ask_explain"] = services.explain_ask(run)
    context.update(run_figures(run, places, request.user))
    if run.kind == models.PreemptionRun.Kind.WHATIF_QUOTA and run.status == "done":
        context["schedule_form"] = forms.ChangeForm.for_plan(run, types, current_max)
        context["plan_changes"] = forms.max_changes(
            current_max(run.queue),
            run.request.get("new_max") if isinstance(run.request, dict) else None,
        )
    redaction = run_redaction(request.user, run)
    if redaction is not None:  # a tenant: victims of queues it cannot view without names
        redact_run_page(context, run, redaction)
    return context


def _wants_answer(request: HttpRequest) -> bool:
    """The page's script asks for the answer alone (JSON), not for the next page."""
    return "application/json" in request.headers.get("Accept", "")


@never_cache
@require_GET
def whatif_answer(request: HttpRequest) -> HttpResponse:
    """The answer of what-if ``?run=`` alone, as JSON, for the page's script to swap in.

    ``{"run", "status", "finished", "location", "html", "figures"}``: the answer
    region's HTML (escaped as on the page, the figures' data left out), each figure
    by the id of the element that draws it, and the page's URL for this answer
    (``location``: a reload shows the same answer).  403 when not signed in, 404
    for an unknown run.
    """
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Sign in to read an answer."}, status=403)
    run_id = int_param(request.GET.get("run"))
    if run_id is None:
        return JsonResponse({"detail": "run: give a run id."}, status=400)
    return _answer_response(request, run_id)


def _answer_response(
    request: HttpRequest, run_id: int, current_max: forms.CurrentMax | None = None
) -> HttpResponse:
    run = (
        models.PreemptionRun.objects.select_related("snapshot", "partition")
        .defer("snapshot__scenario")
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        return JsonResponse({"detail": f"No run {run_id}."}, status=404)
    if scoping.is_tenant(request.user) and not scoping.may_view_run(request.user, run):
        return JsonResponse({"detail": DENIED}, status=403)
    types = data.known_types(run.snapshot) if run.snapshot else ["vcore", "memory"]
    # a post passes the one it checked the form with (the run's partition: no second read)
    context = answer_context(request, run, types, current_max or current_max_of(run.partition))
    context["figures_apart"] = True
    html = render_to_string("dashboard/_whatif_answer.html", context, request=request)
    payload = {
        "run": run.pk,
        "status": run.status,
        "finished": run.status not in RUN_ACTIVE,
        "location": context["answer_location"],
        "html": html,
        "figures": {
            key: context[name] for key, name in ANSWER_FIGURES.items() if context.get(name)
        },
    }
    # as json_script does: no "<", ">" or "&" in the body, whatever a queue is called
    # (str.replace: a third of a megabyte in a few ms, where str.translate takes 30)
    body = json.dumps(payload, cls=DjangoJSONEncoder, separators=(",", ":"))
    for char, escaped in _JSON_ESCAPES:
        body = body.replace(char, escaped)
    return HttpResponse(body, content_type="application/json")


_JSON_ESCAPES = (("&", "\\u0026"), ("<", "\\u003C"), (">", "\\u003E"))


def _quota_initial(
    request: HttpRequest, run: models.PreemptionRun | None, known: Sequence[str] = ()
) -> dict[str, object]:
    """The quota form starts at ``?queue=`` (with its max in force) or at the what-if shown."""
    if run is not None and run.kind == models.PreemptionRun.Kind.WHATIF_QUOTA:
        initial: dict[str, object] = {"queue": run.queue}
        new_max = run.request.get("new_max") if isinstance(run.request, dict) else None
        for t in {*(new_max or {}), *known}:
            q = (new_max or {}).get(t)
            initial[f"max__{t}"] = "" if q is None else quantities.format_quantity(int(q), str(t))
            initial[f"unlimited__{t}"] = q is None
        return initial
    queue = request.GET.get("queue")
    return {"queue": queue} if queue else {}


def _preempt_initial(
    run: models.PreemptionRun | None, asks: Sequence[models.PendingAsk]
) -> dict[str, object]:
    """The preempt form starts at the ask of the what-if shown, else the first pending ask."""
    if run is not None and isinstance(run.request, dict) and run.request.get("ask_key"):
        return {"ask_key": run.request["ask_key"]}
    typed = run.request.get("ask") if run is not None and isinstance(run.request, dict) else None
    if isinstance(typed, dict):  # the typed ask of the what-if shown stays in the form
        initial: dict[str, object] = {
            "ask_key": "",
            "queue": typed.get("queue", ""),
            "priority": typed.get("priority", 0),
            "allow_preempt_other": bool(typed.get("allow_preempt_other", True)),
        }
        for t, q in (typed.get("resources") or {}).items():
            initial[f"res__{t}"] = quantities.format_quantity(int(q), str(t))
        return initial
    return {"ask_key": asks[0].key} if asks else {}

"""The work lost to preemption: per queue and per day or week, a chart, a table and CSV."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard import display, services
from dashboard.charts.worklost import work_lost_figure
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.common import no_snapshot
from dashboard.services.history import work_lost as wl


class WorkLostFilter(forms.Form):
    period = forms.ChoiceField(
        required=False, choices=[("day", "per day"), ("week", "per week")], initial="day"
    )
    queue = forms.CharField(required=False, max_length=1000, label="Queue (and below)")
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    type = forms.CharField(required=False, max_length=200, label="Chart of")


def _answer(request: HttpRequest) -> tuple[WorkLostFilter, wl.WorkLost | None, str]:
    """The filter, the answer for the scope's partition, and why there is none."""
    scope = scope_mod.resolve(request)
    form = WorkLostFilter(request.GET)
    if scope.partition is None:
        return form, None, ""
    if not form.is_valid():
        errors = form.errors.items()
        return form, None, "; ".join(f"{k}: {' '.join(str(m) for m in v)}" for k, v in errors)
    v = form.cleaned_data
    since: date | None = v.get("since")
    until: date | None = v.get("until")
    try:
        answer = wl.work_lost(
            scope.partition,
            period=v.get("period") or "day",
            since=since,
            until=until,
            queue=(v.get("queue") or "").strip(),
            user=request.user,
        )
    except services.ServiceError as exc:
        return form, None, str(exc)
    return form, answer, ""


def _cells(res: dict[str, int], types: tuple[str, ...]) -> list[str]:
    return [display.format_work(t, res[t]) if res.get(t) else "—" for t in types]


def _total_row(rows: Sequence[wl.WorkLostRow]) -> dict[str, object]:
    """The table's total row beside the lost work: applications, those with lost work,
    observed victims and what they held."""
    held: dict[str, int] = {}
    for r in rows:
        for t, q in r.observed_resources.items():
            held[t] = held.get(t, 0) + q
    return {
        "applications": sum(r.applications for r in rows),
        "with_loss": sum(r.applications_with_loss for r in rows),
        "victims": sum(r.observed_victims for r in rows),
        "held": display.format_resource(held, empty="—") if held else "—",
    }


@login_required
@require_GET
def work_lost(request: HttpRequest) -> HttpResponse:
    """Per queue and period: lost work by type (chart of one type), the table, CSV."""
    scope = scope_mod.resolve(request)
    if scope.partition is None:
        return no_snapshot(request, "Work lost")
    form, answer, problem = _answer(request)
    context: dict[str, object] = {"title": "Work lost", "filter": form, "problem": problem}
    if answer is not None:
        chosen = form.cleaned_data.get("type") or ""
        # cores unless another type is asked for (or there is no lost vcore)
        rtype = chosen if chosen in answer.types else "vcore"
        if rtype not in answer.types and answer.types:
            rtype = answer.types[0]
        unit, scale = display.work_unit(rtype)
        series = {
            q: {p: v / scale for p, v in by_period.items()}
            for q, by_period in wl.lost_by_queue(answer, rtype).items()
        }
        context.update(
            {
                "answer": answer,
                "chart_type": rtype,
                "figure": work_lost_figure(
                    wl.periods_of(answer.rows), series, rtype=rtype, unit=unit, period=answer.period
                ),
                "headers": [f"{t} ({display.work_unit(t)[0]})" for t in answer.types],
                "rows": [
                    {
                        "row": r,
                        "lost": _cells(r.lost, answer.types),
                        "observed": display.format_resource(r.observed_resources, empty="—"),
                    }
                    for r in answer.rows
                ],
                "totals": _cells(answer.totals(), answer.types),
                "total": _total_row(answer.rows),
                "export_url": reverse("work_lost_csv") + "?" + request.GET.urlencode(),
            }
        )
    return render(request, "dashboard/work_lost.html", context)


@login_required
@require_GET
def work_lost_csv(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The same rows as CSV: each type's lost work in its own column, in hours."""
    scope = scope_mod.resolve(request)
    if scope.partition is None:
        return HttpResponse("no partition in view\n", status=404, content_type="text/plain")
    _, answer, problem = _answer(request)
    if answer is None:
        return HttpResponse(problem + "\n", status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(
        wl.work_lost_csv_lines(answer), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="work-lost-{stamp}.csv"'
    return response

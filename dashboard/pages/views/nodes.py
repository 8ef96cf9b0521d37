"""The nodes page: capacity and allocated per node, with a heatmap."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import (
    HttpRequest,
    HttpResponse,
)
from django.shortcuts import render
from django.views.decorators.http import (
    require_GET,
)

from dashboard import display, services
from dashboard.charts.nodes import node_heatmap_figure
from dashboard.pages import data
from dashboard.pages import scope as scope_mod
from dashboard.pages.views.common import no_snapshot

NODE_SORTS = {"id": "node_id", "schedulable": "schedulable"}


@login_required
@require_GET
def nodes(request: HttpRequest) -> HttpResponse:
    """Utilisation per node and type, and the allocations on one node."""
    scope = scope_mod.resolve(request)
    if scope.snapshot is None:
        return no_snapshot(request, "Nodes")
    node_rows = data.node_rows(scope.snapshot)
    types = sorted({t for n in node_rows for t in n.reported}, key=_type_key)
    text = request.GET.get("q", "").strip()
    shown = [n for n in node_rows if text.lower() in n.id.lower()] if text else node_rows
    selected = request.GET.get("node", "")
    allocations = (
        list(
            services.snapshot_allocations(scope.snapshot)
            .filter(node=selected)
            .order_by("queue", "key")
        )
        if selected
        else None
    )
    names = services.allocation_names(scope.snapshot, (a.key for a in allocations or ()))
    selected_row = (
        services.snapshot_nodes(scope.snapshot).filter(node_id=selected).first()
        if selected
        else None
    )
    table = [
        {
            "id": n.id,
            "schedulable": n.schedulable,
            "cells": [
                {
                    "type": t,
                    "used": display.format_quantity(t, n.allocated.get(t, 0)),
                    "cap": display.format_quantity(t, n.capacity[t]) if t in n.capacity else "—",
                    "pct": round(100 * n.allocated.get(t, 0) / n.capacity[t])
                    if n.capacity.get(t)
                    else None,
                    "reported": display.format_quantity(t, n.reported[t])
                    if t in n.reported
                    else "—",
                    "occupied": display.format_quantity(t, n.occupied[t])
                    if n.occupied.get(t)
                    else "",
                }
                for t in types
            ],
        }
        for n in shown[:500]
    ]
    return render(
        request,
        "dashboard/nodes.html",
        {
            "title": "Nodes",
            "heatmap": node_heatmap_figure(shown, types, selected=selected or None),
            "types": types,
            "table": table,
            "node_total": len(node_rows),
            "shown_total": len(shown),
            "selected": selected,
            "allocations": allocations,
            "names": names,
            "foreign_pods": selected_row.foreign_pods if selected_row is not None else [],
            "selected_node": selected_row,
            "q": text,
        },
    )


def _type_key(t: str) -> tuple[int, str]:
    return ({"vcore": 0, "memory": 1}.get(t, 2), t)

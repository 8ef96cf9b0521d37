"""Run figures: the history timeline and a quota plan's claimed shares and victims."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import cast

from dashboard.charts.style import (
    MEASURE_COLOURS,
    OUTCOME_COLOURS,
    VICTIM_COLOUR,
    axis_name,
    base_layout,
    on_axis,
    padded_range,
    plot_text,
    side_by_side,
    update_layout,
)
from dashboard.charts.values import FigureDict, RunRow, type_order
from dashboard.display import format_quantity, in_units, outcome_with_nature, unit_of

#: The marker of each run nature: what-if, predicted and observed never look alike.
NATURE_SYMBOLS = {"what-if": "diamond", "predicted": "circle", "observed": "square"}


def legend_name(nature: str, outcome: str) -> str:
    """A timeline legend entry: the run's nature, then its outcome in words that claim
    nothing happened in a cluster unless it was observed there."""
    return outcome_with_nature(nature, outcome)


def history_timeline_figure(runs: Sequence[RunRow]) -> FigureDict:
    """Preemption runs over time: one marker per run, row per queue, colour per outcome,
    marker shape per nature (what-if, predicted, observed), each legend entry naming both.

    Marker size grows with the number of victims; ``customdata`` carries the
    run id so the page can open the run on click.
    """
    data: list[dict[str, object]] = []
    by_outcome: dict[tuple[str, str], list[RunRow]] = {}
    for run in sorted(runs, key=lambda r: (r.started, r.id)):
        by_outcome.setdefault((run.nature, run.outcome), []).append(run)
    for (nature, outcome), group in sorted(by_outcome.items()):
        data.append(
            {
                "type": "scatter",
                "x": [r.started.isoformat() for r in group],
                "y": [plot_text(r.queue) for r in group],
                "mode": "markers",
                "name": plot_text(legend_name(nature, outcome)),
                "marker": {
                    "size": [min(30, 10 + 2 * r.victims) for r in group],
                    "color": OUTCOME_COLOURS.get(outcome, "#868e96"),
                    "symbol": NATURE_SYMBOLS.get(nature, "circle"),
                    "line": {"width": 1, "color": "rgba(255,255,255,0.9)"},
                },
                "customdata": [r.id for r in group],
                "hovertext": [_run_hover(r) for r in group],
                "hoverinfo": "text",
            }
        )
    xaxis: dict[str, object] = {"type": "date", "title": {"text": ""}, "automargin": True}
    span = padded_range([r.started for r in runs], timedelta(minutes=10))
    if span is not None:
        xaxis["range"] = span
    annotations: list[dict[str, object]] = []
    if not runs:
        # no runs: no date axis at all (plotly would draw the year 2000), a sentence instead
        xaxis = {"visible": False}
        annotations.append(
            {
                "text": "No runs match: nothing to draw.",
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14},
            }
        )
    layout = base_layout(
        height=max(260, 120 + 28 * len({r.queue for r in runs})),
        margin={"t": 20, "l": 20, "r": 20, "b": 40},
        xaxis=xaxis,
        yaxis={"type": "category", "title": {"text": ""}, "automargin": True}
        if runs
        else {"visible": False},
        # above the plot, growing upwards when it wraps on a narrow window: never over it
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"},
        annotations=annotations,
    )
    return {"data": data, "layout": layout}


def _run_hover(run: RunRow) -> str:
    lines = [
        f"<b>run {run.id}</b> · {plot_text(legend_name(run.nature, run.outcome))}",
        f"queue {plot_text(run.queue)}",
        f"trigger {plot_text(run.trigger)}",
        f"started {run.started:%Y-%m-%d %H:%M:%S %Z}".rstrip(),
        f"victims {run.victims}",
    ]
    if run.finished is not None:
        lines.append(f"took {(run.finished - run.started).total_seconds():.2f} s")
    return "<br>".join(lines)


def quota_plan_figure(answer: Mapping[str, object]) -> FigureDict:
    """A quota-decrease plan: per leaf and type, its share of the target against claimed.

    *answer* is the engine's ``quota_change`` answer as a dict (``to_dict()``).
    When more than the queue itself took part, the last row compares the whole
    target with the total claimed.
    """
    target = cast(Mapping[str, int], answer.get("preemptable") or {})
    claimed = cast(Mapping[str, int], answer.get("claimed") or {})
    leaves = cast(Mapping[str, Mapping[str, object]], answer.get("leaves") or {})
    queue = str(answer.get("queue", ""))
    shown = sorted(target, key=type_order) or ["vcore"]
    names = sorted(leaves)
    with_total = names != [queue]
    layout = base_layout(
        barmode="group",
        height=max(240, 110 + 56 * (len(names) + int(with_total))),
        margin={"t": 50, "l": 170, "r": 30, "b": 30},
        legend={"orientation": "h", "y": -0.12},
    )
    side_by_side(layout, [plot_text(f"{t} ({unit_of(t)[0] or 'count'})") for t in shown], 0.08)
    data: list[dict[str, object]] = []
    for index, t in enumerate(shown, start=1):
        ys = [plot_text(n) for n in names] + ([f"<b>{plot_text(queue)}</b>"] if with_total else [])
        shares = [cast(Mapping[str, int], leaves[n].get("preemptable") or {}) for n in names]
        claims = [cast(Mapping[str, int], leaves[n].get("claimed") or {}) for n in names]
        share_q = [s.get(t, 0) for s in shares] + ([target.get(t, 0)] if with_total else [])
        claim_q = [c.get(t, 0) for c in claims] + ([claimed.get(t, 0)] if with_total else [])
        for name, values, colour in (
            ("target share", share_q, MEASURE_COLOURS["preemptable"]),
            ("claimed", claim_q, VICTIM_COLOUR),
        ):
            data.append(
                on_axis(
                    {
                        "type": "bar",
                        "orientation": "h",
                        "y": ys,
                        "x": [in_units(t, v) for v in values],
                        "name": name,
                        "legendgroup": name,
                        "showlegend": index == 1,
                        "marker": {"color": colour},
                        "text": [format_quantity(t, v) for v in values],
                        "textposition": "auto",
                        "hovertext": [
                            f"{y}<br>{name}: {format_quantity(t, v)}"
                            for y, v in zip(ys, values, strict=True)
                        ],
                        "hoverinfo": "text",
                    },
                    index,
                )
            )
        update_layout(
            layout, axis_name("y", index), autorange="reversed", showticklabels=index == 1
        )
    return {"data": data, "layout": layout}

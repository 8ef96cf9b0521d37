"""The node heatmap: allocated against capacity per node and resource type."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from dashboard.charts.style import FENCE_COLOUR, VICTIM_COLOUR, base_layout, plot_text
from dashboard.charts.values import FigureDict, NodeRow, type_order
from dashboard.display import format_quantity


def node_heatmap_figure(
    nodes: Sequence[NodeRow],
    types: Sequence[str] | None = None,
    *,
    highlight: Collection[str] = (),
    selected: str | None = None,
) -> FigureDict:
    """Utilisation (allocated / capacity, %) per node and resource type.

    Nodes run along x (sorted by id), types along y.  A node without capacity
    in a type has no cell.  Nodes in *highlight* (those holding a run's victims)
    are outlined in crimson and labelled "victims" above their column; the
    *selected* node (the Nodes page's) in blue, labelled "selected".
    """
    ordered = sorted(nodes, key=lambda n: n.id)
    if types is None:
        seen: set[str] = set()
        for n in ordered:
            seen.update(n.capacity)
        types = sorted(seen, key=type_order)
    labels = [plot_text(n.id) for n in ordered]
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for t in types:
        z_row: list[float | None] = []
        t_row: list[str] = []
        for n, label in zip(ordered, labels, strict=True):
            cap = n.capacity.get(t)
            used = n.allocated.get(t, 0)
            head = f"<b>{label}</b>{'' if n.schedulable else ' (unschedulable)'}"
            if not cap:
                z_row.append(None)
                t_row.append(f"{head}<br>{plot_text(t)}: no capacity")
            else:
                z_row.append(round(100 * used / cap, 1))
                line = (
                    f"{head}<br>{plot_text(t)}: allocated {format_quantity(t, used)} of "
                    f"{format_quantity(t, cap)} for YuniKorn ({100 * used / cap:.1f}%)"
                )
                if n.occupied.get(t):
                    line += (
                        f"<br>capacity as reported {format_quantity(t, n.reported.get(t))}"
                        f" · occupied by non-YuniKorn pods {format_quantity(t, n.occupied[t])}"
                    )
                t_row.append(line)
        z.append(z_row)
        text.append(t_row)
    heat: dict[str, object] = {
        "type": "heatmap",
        "x": labels,
        "y": [plot_text(t) for t in types],
        "z": z,
        "hovertext": text,
        "hoverinfo": "text",
        "zmin": 0,
        "zmax": 100,
        "colorscale": [[0, "#e7f5ff"], [0.6, "#4dabf7"], [0.85, "#f08c00"], [1, "#c2255c"]],
        "colorbar": {"title": {"text": "%"}, "thickness": 12},
        "xgap": 1 if len(ordered) < 200 else 0,
        "ygap": 2,
    }
    shapes: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    marks = {n: ("▼ victims", VICTIM_COLOUR) for n in highlight}
    if selected is not None and selected not in marks:
        marks[selected] = ("▼ selected", FENCE_COLOUR)
    for index, n in enumerate(ordered):
        if n.id not in marks:
            continue
        label, colour = marks[n.id]
        # an outline around the node's column, its meaning written above it
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": index - 0.5,
                "x1": index + 0.5,
                "y0": 0,
                "y1": 1,
                "line": {"color": colour, "width": 3},
                "fillcolor": "rgba(0,0,0,0)",
            }
        )
        annotations.append(
            {
                "x": index,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "text": label,
                "showarrow": False,
                "font": {"color": colour, "size": 11},
            }
        )
    layout = base_layout(
        height=140 + 46 * max(1, len(types)),
        margin={"t": 30, "l": 20, "r": 20, "b": 80},
        xaxis={
            "type": "category",
            "showticklabels": len(ordered) <= 60,
            "title": "nodes",
            "automargin": True,
        },
        # the type names (ephemeral-storage, nvidia.com/gpu) get the room they need
        yaxis={"type": "category", "autorange": "reversed", "automargin": True},
        showlegend=False,
        shapes=shapes,
        annotations=annotations,
    )
    return {"data": [heat], "layout": layout}

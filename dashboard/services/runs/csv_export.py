"""The runs history as CSV: one column set for the API and the pages.

Resources are in the pages' units (:mod:`dashboard.display`): ``target`` and
``claimed`` in words, and one numeric column per resource type after the fixed
columns (``target vcore (cores)``, ``claimed memory (GiB)``...).  The API's JSON
keeps the scheduler's raw quantities (millicores, bytes).

User text (queue paths, allocation keys, alerts, errors) can start with a
spreadsheet formula character; every such cell is defused by :func:`csv_safe`.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice

from django.db.models import Prefetch, QuerySet

from dashboard import models
from dashboard.access.redaction import HIDDEN, Redaction
from dashboard.display import format_resource, outcome_with_nature, plain_quantity, unit_label
from dashboard.services.snapshots.names import AllocationName, allocation_names

RUN_CSV_COLUMNS = (
    "id",
    "partition",
    "snapshot",
    "kind",
    "trigger",
    "nature",
    "predicted",
    "status",
    "outcome",
    "queue",
    "victims",
    "victim_keys",
    "target",
    "claimed",
    "alerts",
    "queued_at",
    "started_at",
    "finished_at",
    "engine_ms",
    "error",
    # added after the others (readers of the older columns keep their positions): the
    # cluster beside the partition name two clusters may share, and the outcome in words
    # after the run's nature (a what-if's "enforced" happened nowhere)
    "cluster",
    "outcome_text",
    # the victims as people name them: each one's pod (namespace/name; its key when the
    # pod is unknown) in the order of victim_keys, and their applications' users
    "victim_pods",
    "victim_users",
)


def csv_safe(text: str) -> str:
    """*text* that a spreadsheet shows as text, never runs as a formula (CSV injection).

    >>> csv_safe("=HYPERLINK(1)"), csv_safe("root.a")
    ("'=HYPERLINK(1)", 'root.a')
    """
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _words(value: object) -> str:
    return format_resource(value, empty="") if isinstance(value, dict) else ""


def resource_columns(types: Iterable[str]) -> list[tuple[str, str, str]]:
    """(field, type, header) per resource column: target then claimed, types sorted."""
    out = []
    for name in ("target", "claimed"):
        for t in sorted(types):
            unit = unit_label(t)
            out.append((name, t, f"{name} {t} ({unit})" if unit else f"{name} {t}"))
    return out


def _per_type(run: models.PreemptionRun, columns: list[tuple[str, str, str]]) -> list[str]:
    cells = []
    for name, t, _ in columns:
        value = getattr(run, name)
        q = value.get(t) if isinstance(value, dict) else None
        cells.append("" if q is None else plain_quantity(t, int(q)))
    return cells


def run_csv_row(
    run: models.PreemptionRun,
    names: Mapping[str, AllocationName] | None = None,
    redaction: Redaction | None = None,
) -> list[object]:
    """One run as a CSV row in :data:`RUN_CSV_COLUMNS` order (victims prefetched).

    *names* are its victims' names (:func:`allocation_names` of its snapshot); without
    them they are read here.  *redaction*: what the reader may not read of the run.
    """
    keys = [v.allocation_key for v in run.victims.all()]
    if names is None:
        names = allocation_names(run.snapshot, keys) if keys else {}
    named = [names.get(k) or AllocationName(k) for k in keys]
    if redaction is not None:
        named = [AllocationName(HIDDEN) if n.key in redaction.keys else n for n in named]
        keys = [HIDDEN if k in redaction.keys else k for k in keys]
    row: list[object] = [
        run.pk,
        run.partition.name,
        run.snapshot_id or "",
        run.kind,
        run.trigger,
        run.nature,
        run.predicted_id or "",
        run.status,
        run.outcome,
        run.queue,
        len(keys),
        " ".join(keys),
        _words(run.target),
        _words(run.claimed),
        " | ".join(str(a) for a in run.alerts or []),
        run.queued_at.isoformat(),
        run.started_at.isoformat() if run.started_at else "",
        run.finished_at.isoformat() if run.finished_at else "",
        "" if run.engine_ms is None else f"{run.engine_ms:.3f}",
        run.error,
        run.partition.cluster.name,
        outcome_with_nature(run.get_nature_display(), run.outcome or run.status),
        " ".join(n.pod or n.key for n in named),
        " ".join(sorted({n.user for n in named if n.user})),
    ]
    if redaction is not None:
        row = [redaction.text(cell) if isinstance(cell, str) else cell for cell in row]
    # every text cell, whatever its column: a name stored before names were checked, or
    # a new column, is defused too
    return [csv_safe(cell) if isinstance(cell, str) else cell for cell in row]


class _Line:
    def write(self, value: str) -> str:
        return value


def run_csv_lines(
    runs: QuerySet[models.PreemptionRun],
    redact: Callable[[models.PreemptionRun], Redaction | None] | None = None,
) -> Iterator[str]:
    """The header and one CSV line per run of *runs*, read in chunks (streamable).

    *redact* gives what the reader may not read of a run (a tenant's, from
    :func:`dashboard.access.redaction.tenant_redaction`): those victims are counted,
    unnamed, and the hidden names are replaced in every text cell.
    """
    writer = csv.writer(_Line())
    types: set[str] = set()
    for target, claimed in runs.values_list("target", "claimed").iterator(chunk_size=2000):
        for value in (target, claimed):
            if isinstance(value, dict):
                types.update(str(t) for t in value)
    columns = resource_columns(types)
    yield writer.writerow([*RUN_CSV_COLUMNS, *(header for _, _, header in columns)])
    victims = Prefetch(
        "victims", queryset=models.RunVictim.objects.only("run_id", "allocation_key", "position")
    )
    rows: Iterator[models.PreemptionRun] = (
        runs.select_related("partition__cluster", "snapshot")
        .defer("snapshot__scenario", "snapshot__warnings")
        .prefetch_related(victims)
        .iterator(chunk_size=500)
    )
    while chunk := list(islice(rows, 500)):
        # the victims' names: one lookup per snapshot of the chunk, not one per run
        keys: dict[int, set[str]] = {}
        for run in chunk:
            if run.snapshot_id is not None:
                keys.setdefault(run.snapshot_id, set()).update(
                    v.allocation_key for v in run.victims.all()
                )
        snapshots = {run.snapshot_id: run.snapshot for run in chunk if run.snapshot_id}
        names = {sid: allocation_names(snapshots[sid], ks) for sid, ks in keys.items() if ks}
        for run in chunk:
            named = names.get(run.snapshot_id, {}) if run.snapshot_id else {}
            redaction = redact(run) if redact is not None else None
            row = run_csv_row(run, named, redaction)
            yield writer.writerow([*row, *_per_type(run, columns)])

"""A run's page as a user the queue ACLs restrict (a *tenant*) reads it: the run of a
queue it may view is shown, its victims in queues it may not view as their place and
resources only (every name ``(hidden)``), and every text of the page (request, answer,
alerts, error, explanations, figures) with the names of
:func:`dashboard.access.redaction.run_redaction` replaced, as the API's run detail."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from typing import Any

from dashboard import models
from dashboard.access.redaction import HIDDEN, Redaction
from dashboard.services.runs.observed import Comparison


@dataclasses.dataclass(frozen=True)
class HiddenVictim:
    """A victim the tenant may not read, with the fields the victims table shows."""

    position: int
    resources: object
    allocation_key: str = HIDDEN
    app: str = HIDDEN
    queue: str = HIDDEN
    leaf: str = HIDDEN
    node: str = HIDDEN
    ask: str = HIDDEN


#: context entries that are JSON-like (dicts, lists, strings): redacted whole
_JSON = ("ask_explain", "needed", "leaves", "plan_figure", "tree_figure", "nodes_figure")


def _alert(alert: models.Alert, redaction: Redaction) -> models.Alert:
    shown = copy.copy(alert)
    shown.message = redaction.text(alert.message)
    return shown


def redact_run_page(
    context: dict[str, object], run: models.PreemptionRun, redaction: Redaction
) -> None:
    """Redact *context* (the run page's, built for *run*) in place for a tenant."""
    shown = copy.copy(run)  # the page's copy: never saved
    for name in ("request", "result", "alerts", "target", "claimed"):
        setattr(shown, name, redaction.json(getattr(run, name)))
    shown.error = redaction.text(run.error)
    context["run"] = shown
    victims: Any = context.get("victims") or []
    context["victims"] = [
        HiddenVictim(v.position, v.resources) if v.allocation_key in redaction.keys else v
        for v in victims
    ]
    for name in ("names", "gang"):
        found = context.get(name)
        if isinstance(found, Mapping):
            context[name] = {k: v for k, v in found.items() if k not in redaction.keys}
    for name in _JSON:
        if context.get(name) is not None:
            context[name] = redaction.json(context[name])
    comparison = context.get("comparison")
    if isinstance(comparison, Comparison):
        context["comparison"] = dataclasses.replace(
            comparison,
            both=tuple(redaction.text(k) for k in comparison.both),
            only_predicted=tuple(redaction.text(k) for k in comparison.only_predicted),
            only_observed=tuple(redaction.text(k) for k in comparison.only_observed),
        )
    if "alert_rows" in context:
        rows: Any = context["alert_rows"]
        context["alert_rows"] = [_alert(a, redaction) for a in rows]
    if "changes" in context:
        changes: Any = context["changes"]
        context["changes"] = [c for c in changes if redaction.text(c.queue_path) == c.queue_path]

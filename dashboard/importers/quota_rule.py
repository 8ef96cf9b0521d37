"""The quota-change design's rule "max above guaranteed while a delay is set", and its two uses.

The seed (``quota-change-enforcement-through-preemption.md``, "Meaningful Quota
Decrease") asks that, when a queue has a quota preemption delay, a lowered max
stays *above* the queue's guaranteed in every type both define: quota
preemption never takes a queue below its guarantee, so a max at the guarantee
leaves nothing above it to reclaim.  yunikorn-core does not apply this rule:
``configvalidator.go`` (``checkResourceConfig``) only asks that guaranteed fits
inside max, so a config with max equal to guaranteed and a delay is accepted
and runs, and the quota preemptor (``quota_preemptor.go``) enforces such a max
on a best-effort basis.

So the rule is used twice, differently:

- a config *imported* from a cluster is accepted as the scheduler accepts it;
  :func:`findings` turns each case into a warning that says what it means;
- a change *made in the dashboard* (an override or a delay written back by
  :func:`dashboard.importers.export.export_config`) is refused when it creates
  such a case (:func:`refusal`), as the design asks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboard.importers.quantities import format_quantity, short_duration

if TYPE_CHECKING:
    from dashboard.importers.config.specs import QueueSpec


@dataclass(frozen=True)
class MaxAtGuarantee:
    """One queue and type where max does not exceed guaranteed while a delay is in force."""

    queue: str
    resource_type: str
    max: int
    guaranteed: int
    delay: float

    def _figures(self) -> str:
        t = self.resource_type
        relation = "equals" if self.max == self.guaranteed else "is below"
        return (
            f"max {t} {format_quantity(self.max, t)} {relation} guaranteed "
            f"{format_quantity(self.guaranteed, t)} with quota.preemption.delay "
            f"{short_duration(self.delay)} in force"
        )

    def warning(self) -> str:
        """What an imported config with this case means (the scheduler runs it)."""
        return (
            f"queue {self.queue}: {self._figures()}: the max leaves no room above the "
            f"guarantee, so quota preemption can claim {self.resource_type} in {self.queue} "
            "only down to the guarantee itself, never below it (yunikorn-core accepts this "
            "config and enforces such a max on a best-effort basis; a change made in the "
            "dashboard must keep max above guaranteed)"
        )

    def refusal(self) -> str:
        """Why a change made in the dashboard that creates this case is refused."""
        return (
            f"queue {self.queue}: max {self.resource_type} "
            f"{format_quantity(self.max, self.resource_type)} must be greater than guaranteed "
            f"{format_quantity(self.guaranteed, self.resource_type)} because a quota preemption "
            f"delay ({short_duration(self.delay)}) is set: a lowered quota must stay above the "
            "guarantee (quota-change design, 'Meaningful Quota Decrease')"
        )


def findings(queues: Iterable[QueueSpec]) -> list[MaxAtGuarantee]:
    """Every queue and type of *queues* where max <= guaranteed while a delay is in force."""
    out: list[MaxAtGuarantee] = []
    for q in queues:
        if q.quota_preemption_delay <= 0 or not q.max or not q.guaranteed:
            continue
        for t in sorted(q.guaranteed):
            m = q.max.get(t)
            if m is not None and m <= q.guaranteed[t]:
                out.append(MaxAtGuarantee(q.path, t, m, q.guaranteed[t], q.quota_preemption_delay))
    return out


def warnings_for(queues: Iterable[QueueSpec], lines: Mapping[str, int]) -> list[str]:
    """:func:`findings` as import warnings, each led by the line of the queue's max."""
    out = []
    for f in findings(queues):
        line = lines.get(f.queue)
        out.append(f"line {line}: {f.warning()}" if line is not None else f.warning())
    return out


def new_findings(before: Iterable[QueueSpec], after: Iterable[QueueSpec]) -> list[MaxAtGuarantee]:
    """The cases in *after* whose queue changed its max, guaranteed or delay since *before*.

    A case the cluster already runs (same queue, same settings) is not the
    dashboard's doing and is left to the import warning.
    """
    old = {q.path: (q.max, q.guaranteed, q.quota_preemption_delay) for q in before}
    after = tuple(after)
    changed = {
        q.path for q in after if old.get(q.path) != (q.max, q.guaranteed, q.quota_preemption_delay)
    }
    return findings(q for q in after if q.path in changed)

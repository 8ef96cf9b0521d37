"""A scheduled quota change, handed back as YuniKorn config and a ``kubectl patch`` command.

Computed on demand from the change and its partition's current config version
(nothing is stored, so there is no hook to miss): the config version's text with
the changed queue's max (and, when the change sets one, its quota preemption delay
as the queue's ``quota.preemption.delay`` property) replaced through the importers'
``export_config`` (comments and order kept, the result re-validated), the ConfigMap form
through ``configmap_of`` (the config is exported once), and a ready-to-run command::

    kubectl patch configmap yunikorn-configs -n yunikorn --type merge -p '{"data":...}'

The patch body is JSON (``json.dumps``, ASCII-only) and every argument is quoted
with ``shlex.quote``, so the command pastes into a POSIX shell unchanged whatever
the config text holds (quotes, newlines, non-ASCII comments).  Available for
changes of a partition that has a cluster source (its namespace and ConfigMap
name are used).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.config import parse_config
from dashboard.importers.errors import ImportFailure
from dashboard.importers.export import configmap_of, export_config, kubectl_patch_command
from dashboard.sources.models import ClusterSource

#: States whose change has fired (``in_force`` of the answer, as before ``fired`` existed:
#: a timer that fired in the dashboard, awaiting the scheduler, counts as fired), or whose
#: timer the scheduler's check cleared (usage within the max: the max stays in force).
IN_FORCE_STATES = (
    dm.QuotaChange.State.RUNNING,
    dm.QuotaChange.State.FIRED,
    dm.QuotaChange.State.DONE,
    dm.QuotaChange.State.CLEARED,
)


@dataclass(frozen=True)
class ChangeConfig:
    change_id: int
    state: str
    in_force: bool
    partition: str
    queue: str
    new_max: dict[str, int] | None
    new_delay: float | None
    source: str
    namespace: str
    configmap_name: str
    config_version: int
    queues_yaml: str
    configmap: str
    kubectl_patch: str
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change_id,
            "state": self.state,
            "in_force": self.in_force,
            "partition": self.partition,
            "queue": self.queue,
            "new_max": self.new_max,
            "new_delay": self.new_delay,
            "source": self.source,
            "namespace": self.namespace,
            "configmap_name": self.configmap_name,
            "config_version": self.config_version,
            "queues_yaml": self.queues_yaml,
            "configmap": self.configmap,
            "kubectl_patch": self.kubectl_patch,
            "notes": list(self.notes),
        }


def source_for_change(change: dm.QuotaChange) -> ClusterSource | None:
    return ClusterSource.objects.filter(
        cluster_id=change.partition.cluster_id, partition=change.partition.name
    ).first()


def change_config(change: dm.QuotaChange) -> ChangeConfig:
    """The partition's current config with this change's new max and delay, in all three forms.

    Raises:
        ServiceError: no cluster source for the partition, no config version
            imported, or a config the scheduler would refuse with this max.
    """
    partition = change.partition
    source = source_for_change(change)
    if source is None:
        raise platform.ServiceError(
            "change",
            f"partition {partition.name!r} has no cluster source: the config patch is made "
            "for partitions that follow a live scheduler",
        )
    version = platform.latest_config(partition)
    if version is None:
        raise platform.ServiceError(
            "config",
            f"partition {partition.name!r} has no imported queue config to patch; import "
            "the scheduler's queues.yaml or ConfigMap first",
        )
    notes: list[str] = []
    try:
        parsed = parse_config(version.text, filename=version.filename or "queues.yaml")
        overrides: dict[str, Mapping[str, int] | None] = {change.queue_path: change.new_max}
        # new_delay None: the change left the delay as it was
        delays = {} if change.new_delay is None else {change.queue_path: change.new_delay}
        queues_yaml = export_config(
            parsed, overrides=overrides, partition=partition.name, delays=delays
        )
        extra = version.parsed.get("extra") if isinstance(version.parsed, dict) else None
        configmap = configmap_of(
            parsed,
            queues_yaml,
            name=source.configmap_name,
            namespace=source.namespace,
            extra=extra if isinstance(extra, dict) and extra else None,
        )
    except ImportFailure as exc:
        raise platform.ServiceError(exc.location or "config", exc.message) from exc
    later = (
        dm.QuotaChange.objects.filter(
            partition=partition, queue_path=change.queue_path, changed_at__gt=change.changed_at
        )
        .exclude(state__in=[dm.QuotaChange.State.CANCELLED, dm.QuotaChange.State.PENDING])
        .order_by("-changed_at", "-id")
        .first()
    )
    if later is not None:
        notes.append(f"change {later.pk} to the same queue came later ({later.state})")
    if change.state not in IN_FORCE_STATES:
        notes.append(f"the change is {change.state}: it has not fired yet")
    return ChangeConfig(
        change_id=change.pk,
        state=change.state,
        in_force=change.state in IN_FORCE_STATES,
        partition=partition.name,
        queue=change.queue_path,
        new_max=change.new_max,
        new_delay=change.new_delay,
        source=source.name,
        namespace=source.namespace,
        configmap_name=source.configmap_name,
        config_version=version.number,
        queues_yaml=queues_yaml,
        configmap=configmap,
        kubectl_patch=kubectl_patch_command(source.configmap_name, source.namespace, queues_yaml),
        notes=notes,
    )

"""What a user the queue ACLs restrict (a *tenant*) reads of a run of one of its queues
whose victims, or whose answer, reach into queues it may not view.

The run is shown, not withheld: its victims in queues the tenant cannot view appear
without names, as their count and their resources (their share of what the run took),
and every other text of the run (request, answer, alerts, error, comparison) has the
names of those victims (allocation keys, applications, pods, namespaces, users) and of
every queue the tenant cannot view replaced by :data:`HIDDEN`.

The services import this module and it reads snapshots through them: it imports them
where it reads, so that either may be imported first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dashboard import models
from dashboard.access import scoping
from dashboard.access.grants import access_for

HIDDEN = "(hidden)"

#: characters a name is made of: a name is replaced only where it stands whole
_NAME = r"[\w.\-@/:#]"


@dataclass(frozen=True)
class Redaction:
    """The names one tenant may not read in one run."""

    #: allocation keys of the victims in queues the tenant cannot view
    keys: frozenset[str]
    #: every name replaced by :data:`HIDDEN` wherever it stands whole
    names: frozenset[str]

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        words = sorted((n for n in self.names if n), key=lambda n: (-len(n), n))
        if not words:
            return None
        alternatives = "|".join(re.escape(w) for w in words)
        return re.compile(f"(?<!{_NAME})(?:{alternatives})(?!{_NAME})")

    def text(self, value: str) -> str:
        """*value* with every hidden name replaced."""
        pattern = self._pattern
        return value if pattern is None else pattern.sub(HIDDEN, value)

    def json(self, value: Any) -> Any:
        """*value* (JSON: dicts, lists, strings, numbers) with every hidden name
        replaced, in keys and in strings."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.json(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.json(v) for v in value]
        return value


def _hidden_queues(access: Any, run: models.PreemptionRun) -> set[str]:
    paths: Iterable[str] = (
        run.snapshot.queues.values_list("path", flat=True) if run.snapshot is not None else ()
    )
    return {p for p in [*paths, *access.tree.paths()] if not access.may_view(p)}


def run_redaction(user: Any, run: models.PreemptionRun) -> Redaction | None:
    """What *user* may not read of *run*; None when it reads all of it (staff, readers
    of every queue)."""
    if not scoping.is_tenant(user):
        return None
    from dashboard.services.snapshots.names import allocation_names

    access = access_for(user, run.partition)
    victims = list(run.victims.values_list("allocation_key", "app", "queue", "leaf", "ask"))
    hidden = [v for v in victims if not access.may_view(v[2] or v[3])]
    keys = {v[0] for v in hidden}
    names: set[str] = _hidden_queues(access, run)
    for key, app, queue, leaf, ask in hidden:
        names.update((key, app, queue, leaf, ask))
    if keys and run.snapshot_id is not None:
        for name in allocation_names(run.snapshot, keys).values():
            names.update((name.pod, name.pod_name, name.namespace, name.app, name.user))
    # never a name of the victims the tenant reads (a namespace or user both may share)
    if keys and run.snapshot_id is not None:
        shown = [v[0] for v in victims if v[0] not in keys]
        for name in allocation_names(run.snapshot, shown).values():
            names -= {name.pod, name.pod_name, name.namespace, name.app, name.user}
    names -= {part for v in victims if v[0] not in keys for part in v}
    names.discard("")
    return Redaction(frozenset(keys), frozenset(names))


def hidden_victim(position: int, resources: object) -> dict[str, object]:
    """A victim the tenant may not read: its place and resources, no name."""
    return {"position": position, "hidden": True, "resources": resources}


def tenant_redaction(user: Any) -> Callable[[models.PreemptionRun], Redaction | None] | None:
    """For a run list or CSV: each run's :func:`run_redaction` for *user*, or None when
    *user* reads every run whole."""
    if not scoping.is_tenant(user):
        return None
    return lambda run: run_redaction(user, run)


def partition_redaction(user: Any, partition: models.Partition) -> Redaction | None:
    """What *user* may not read of *partition*'s newest state: the queues it cannot view
    and the allocations and pending asks in them (keys, applications, pods); None when
    it reads everything.  For answers computed over the whole partition (a plan)."""
    if not scoping.is_tenant(user):
        return None
    from dashboard.services.scope.latest import latest_snapshot
    from dashboard.services.snapshots.spans import snapshot_allocations

    access = access_for(user, partition)
    names = {p for p in access.tree.paths() if not access.may_view(p)}
    keys: set[str] = set()
    shown: set[str] = set()
    snapshot = latest_snapshot(partition, defer_state=True)
    if snapshot is not None:
        names.update(
            p for p in snapshot.queues.values_list("path", flat=True) if not access.may_view(p)
        )
        rows = snapshot_allocations(snapshot).values_list("key", "pod", "app", "queue")
        asks = snapshot.asks.values_list("key", "app", "app", "queue")
        for key, pod, app, queue in [*rows, *asks]:
            if access.may_view(queue):
                shown.update((key, pod, app))
            else:
                keys.add(key)
                names.update((key, pod, app))
    names -= shown
    names.discard("")
    return Redaction(frozenset(keys), frozenset(names))


def queue_redaction(user: Any, partition: models.Partition | None) -> Redaction | None:
    """The paths of *partition*'s queues *user* may not view (its config's and its
    newest snapshot's), for a row's free text that names no victim; None when it reads
    everything."""
    if not scoping.is_tenant(user) or partition is None:
        return None
    from dashboard.services.scope.latest import latest_snapshot

    access = access_for(user, partition)
    names = {p for p in access.tree.paths() if not access.may_view(p)}
    snapshot = latest_snapshot(partition, defer_state=True)
    if snapshot is not None:
        names.update(
            p for p in snapshot.queues.values_list("path", flat=True) if not access.may_view(p)
        )
    names.discard("")
    return Redaction(frozenset(), frozenset(names))


class RowRedactions:
    """For one list of rows read by one user: each run's and each partition's
    redaction, computed once however many rows share it (None: the user reads all)."""

    def __init__(self, user: Any) -> None:
        self.user = user
        self.tenant = scoping.is_tenant(user)
        self._runs: dict[int, Redaction | None] = {}
        self._partitions: dict[int, Redaction | None] = {}

    def run(self, run: models.PreemptionRun) -> Redaction | None:
        if not self.tenant:
            return None
        if run.pk not in self._runs:
            self._runs[run.pk] = run_redaction(self.user, run)
        return self._runs[run.pk]

    def partition(self, partition: models.Partition | None) -> Redaction | None:
        if not self.tenant or partition is None:
            return None
        if partition.pk not in self._partitions:
            self._partitions[partition.pk] = queue_redaction(self.user, partition)
        return self._partitions[partition.pk]

    def text(self, value: str, run: models.PreemptionRun | None, partition: Any) -> str:
        """*value* (a row's free text) less the names the user may not read: those of
        *run* when the row has one, else the hidden queues of *partition*."""
        if not self.tenant or not value:
            return value
        redaction = self.run(run) if run is not None else self.partition(partition)
        return value if redaction is None else redaction.text(value)


def row_redactions(context: dict[str, Any]) -> RowRedactions | None:
    """The :class:`RowRedactions` of a serializer's request, kept in its (shared)
    context; None without a request."""
    request = context.get("request")
    if request is None:
        return None
    found = context.get("row_redactions")
    if not isinstance(found, RowRedactions):
        found = context["row_redactions"] = RowRedactions(request.user)
    return found

"""What an administrator calls an allocation: its pod (``namespace/name``), then its key.

Every allocation YuniKorn reports carries its pod in its tags
(``kubernetes.io/meta/namespace``, ``kubernetes.io/meta/podName``); the snapshot
importer joins them as ``pod`` and the allocation's span keeps it. The application's
user comes from the application's row of the same snapshot. :func:`allocation_names`
is the one place the pages, the API, the CSV files and the alert texts read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dashboard import models
from dashboard.display import allocation_label, short_key
from dashboard.services.snapshots.spans import snapshot_allocations, snapshot_applications

_BATCH = 2000


@dataclass(frozen=True, slots=True)
class AllocationName:
    """One allocation as people name it: ``pod`` is ``namespace/name`` (empty if unknown)."""

    key: str
    pod: str = ""
    app: str = ""
    user: str = ""

    @property
    def namespace(self) -> str:
        return self.pod.partition("/")[0] if "/" in self.pod else ""

    @property
    def pod_name(self) -> str:
        return self.pod.partition("/")[2] if "/" in self.pod else self.pod

    @property
    def label(self) -> str:
        """``namespace/pod (9d76a48e…)``, or the key alone when the pod is unknown."""
        return allocation_label(self.key, self.pod)

    @property
    def described(self) -> str:
        """:attr:`label` with the user: ``namespace/pod (9d76a48e…, user alice)``."""
        if not self.user:
            return self.label
        if self.pod:
            return f"{self.pod} ({short_key(self.key)}, user {self.user})"
        return f"{self.key} (user {self.user})"

    def as_fields(self) -> dict[str, str]:
        """The API's and the CSV files' fields: ``pod``, ``namespace``, ``user``."""
        return {"pod": self.pod_name, "namespace": self.namespace, "user": self.user}


def allocation_names(
    snapshot: models.ClusterSnapshot | None, keys: Iterable[str]
) -> dict[str, AllocationName]:
    """The name of each allocation of *keys*, by key, read from *snapshot*.

    A key the snapshot does not hold (an allocation gone since, or no snapshot) gets
    a name of its key alone.
    """
    wanted = sorted({str(k) for k in keys if k})
    out = {k: AllocationName(k) for k in wanted}
    if snapshot is None or not wanted:
        return out
    found: dict[str, tuple[str, str]] = {}
    for i in range(0, len(wanted), _BATCH):
        rows = (
            snapshot_allocations(snapshot)
            .filter(key__in=wanted[i : i + _BATCH])
            .order_by()
            .values_list("key", "pod", "app")
        )
        found.update((k, (pod, app)) for k, pod, app in rows)
    apps = sorted({app for _, app in found.values() if app})
    users: dict[str, str] = {}
    for i in range(0, len(apps), _BATCH):
        user_rows = (
            snapshot_applications(snapshot)
            .filter(app_id__in=apps[i : i + _BATCH])
            .order_by()
            .values_list("app_id", "details__user")
        )
        users.update((a, u) for a, u in user_rows if isinstance(u, str))
    for k, (pod, app) in found.items():
        out[k] = AllocationName(k, pod, app, users.get(app, ""))
    return out

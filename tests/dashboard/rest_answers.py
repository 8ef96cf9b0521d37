"""REST answer folders as the importer tests upload them, and lab-west's quota changes.

lab-west is ``data/cluster-b`` (root.reports lowered 12 -> 11 cores at 13:58:00, its
``quotaPreemptionStartTime`` 14:18:00); the shared acme-ml folder is the
``fixtures_dir`` fixture's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dashboard import models, services

CLUSTER_B = Path(__file__).parent / "data" / "cluster-b"
GI = 2**30


def at(text: str) -> datetime:
    """An ISO time without a zone, in UTC."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def rest_files(folder: Path, *, events: bool = True) -> dict[str, bytes]:
    """A folder's REST answers by name, as an upload sends them: never the state dump,
    and without the events batch unless *events*."""
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.glob("*.json"))
        if "statedump" not in p.name and (events or p.name != "events_batch.json")
    }


def without_start_time(answers: dict[str, bytes]) -> dict[str, bytes]:
    """*answers* as a scheduler that does not report its quota preemption start times."""
    tree = json.loads(answers["partition_queues.json"])
    for child in tree["children"]:
        child.pop("quotaPreemptionStartTime", None)
        child.pop("isQuotaPreemptionRunning", None)
    return {**answers, "partition_queues.json": json.dumps(tree).encode()}


def import_config_file(path: Path, now: datetime, **kw: Any) -> Any:
    """The config file at *path* imported at *now*."""
    return services.import_config(path.read_bytes(), filename=path.name, now=now, **kw)


def plan_reports_max(cores: int, user: Any, now: datetime) -> models.QuotaChange:
    """root.reports lowered to *cores* in the dashboard by *user* at *now* (48 GiB kept)."""
    return services.schedule_quota_change(
        models.Partition.objects.get(name="default"),
        "root.reports",
        new_max={"vcore": cores * 1000, "memory": 48 * GI},
        user=user,
        now=now,
    )


def rest_folder(cluster: str, fixtures_dir: Path) -> Path:
    """The REST answers folder of ``acme-ml`` (the shared fixtures) or ``lab-west``."""
    return fixtures_dir / "rest" if cluster == "acme-ml" else CLUSTER_B / "rest"


def load(folder: Path, name: str) -> Any:
    """One REST answer of *folder*, parsed."""
    return json.loads((folder / name).read_bytes())


def rest_queues(folder: Path) -> dict[str, dict[str, Any]]:
    """Every queue of *folder*'s partition_queues.json by its queuename."""
    out: dict[str, dict[str, Any]] = {}
    stack = [load(folder, "partition_queues.json")]
    while stack:
        q = stack.pop()
        out[q["queuename"]] = q
        stack.extend(q.get("children", []))
    return out


def nonzero(r: dict[str, int] | None) -> dict[str, int]:
    """*r* without its zero quantities (None: empty)."""
    return {t: q for t, q in (r or {}).items() if q}

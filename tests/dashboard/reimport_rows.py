"""A sequence of config imports with history, and the rows they leave, for the test that
holds a config re-import's stored rows unchanged (tests/dashboard/services/configs/
test_reimport_rows.py) against the rows main stored before the import's writes were made
set-based (tests/dashboard/data/reimport-rows.json).

Two partitions (``default`` on the scheduler's timer rules, ``batch`` on the seed's) go
through six configs: queues added, removed and renamed; maxes lowered (with usage above
and below), raised and lowered again; guarantees, queue ACLs, properties and delays
(a parent's and a leaf's) changed; a warning; the same config re-written and re-sent.
Between them: snapshots with usage (one with the scheduler's running timer, one showing
a new max before its config), QUEUE_MAX events, a change planned in the dashboard that
a later config shows, and the scheduler's own quota preemption of a waiting change.

The capture, run once on main before the change (with a scratch database):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/NAME .venv/bin/python \\
        tests/dashboard/reimport_rows.py tests/dashboard/data/reimport-rows.json
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
GI = 2**30


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _leaf(name: str, vcore: int, **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"max": {"vcore": vcore, "memory": f"{vcore}Gi"}}
    if "guaranteed" in extra:
        resources["guaranteed"] = {"vcore": extra.pop("guaranteed")}
    return {"name": name, "resources": resources, **extra}


def _parent(
    name: str, delay: str | None, leaves: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    node: dict[str, Any] = {"name": name, "queues": leaves, **extra}
    if delay is not None:
        node.setdefault("properties", {})["quota.preemption.delay"] = delay
    return node


def _partition(name: str, parents: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "preemption": {"quotapreemptionenabled": True},
        "queues": [{"name": "root", "submitacl": "*", "queues": parents}],
    }


def _default(round_: int) -> dict[str, Any]:
    """The ``default`` partition in config *round_* (0-5)."""
    x1 = {0: 10, 5: 12}.get(round_, 4)  # lowered below its usage (6) in round 1, raised
    x2 = 10 if round_ == 0 else 8  # lowered above its usage, timed by a QUEUE_MAX event
    x3 = 10 if round_ == 0 else 16  # raised
    x6 = {0: 10, 1: 10, 2: 5, 3: 3}.get(round_, 9)  # lowered, lowered again, raised
    leaves_a = [
        _leaf("x1", x1, guaranteed=1),
        _leaf("x2", x2),
        _leaf("x3", x3),
        _leaf("x4", 10, guaranteed=2 if round_ < 1 else 3),  # a guarantee change
        _leaf("x5", 10, properties={"color": "blue" if round_ < 1 else "green"}),
        _leaf(
            "x6", x6, **({"properties": {"quota.preemption.delay": "2m"}} if round_ >= 3 else {})
        ),
    ]
    if 1 <= round_ < 5:
        leaves_a.append(_leaf("x7", 6))  # added, removed
    leaves_b = [
        _leaf("y1", 10 if round_ < 2 else 7),  # round 2 shows the dashboard's planned max
        _leaf("y2", 10 if round_ < 4 else 2),  # lowered in round 4 (timer from the snapshot)
        _leaf("y3" if round_ < 1 else "y3r", 10),  # renamed
    ]
    if round_ < 1:
        leaves_b.append(_leaf("y4", 10))  # removed
    b_acl = "alice" if round_ < 2 else "alice,bob ops"  # an ACL change
    return _partition(
        "default",
        [
            _parent("a", "5m" if round_ < 1 else "6m", leaves_a),  # a parent's delay change
            _parent("b", "10m", leaves_b, adminacl=b_acl),
        ],
    )


def _batch(round_: int) -> dict[str, Any]:
    """The ``batch`` partition (seed rules) in config *round_*: lowered, then raised."""
    z1 = {0: 20, 1: 12, 2: 12, 3: 30}.get(round_, 30)  # lowered, then an increase cancels
    z2 = {0: 20, 1: 12, 2: 8, 5: 20}.get(round_, 6)  # lowered, lowered again (a reset), raised
    delay = "30s" if round_ >= 4 else "3m"  # a delay under a minute: a warning
    return _partition("batch", [_parent("c", delay, [_leaf("z1", z1), _leaf("z2", z2)])])


def config_text(round_: int, *, comment: str = "") -> str:
    import yaml

    doc = {"partitions": [_default(round_), _batch(round_)]}
    return comment + yaml.safe_dump(doc, sort_keys=False)


def _scenario(
    partition: str, round_: int, shown_max: dict[str, int] | None = None
) -> dict[str, Any]:
    """A scenario of *partition* as config *round_* has it, with usage in every leaf (6
    cores in ``default``, 15 in ``batch``); *shown_max* overrides leaves' maxes (the
    cluster ahead of the config)."""
    used = 6 if partition == "default" else 15
    spec = _default(round_) if partition == "default" else _batch(round_)
    root = spec["queues"][0]
    children = []
    allocations = []
    for p in root["queues"]:
        leaves = []
        for leaf in p["queues"]:
            path = f"root.{p['name']}.{leaf['name']}"
            vcore = (shown_max or {}).get(path, leaf["resources"]["max"]["vcore"])
            leaves.append(
                {"name": leaf["name"], "max": {"vcore": vcore * 1000, "memory": vcore * GI}}
            )
            allocations.append(
                {
                    "key": f"{partition}-{path}",
                    "app": f"app-{path}",
                    "queue": path,
                    "node": "n1",
                    "resources": {"vcore": used * 1000, "memory": used * GI},
                    "priority": 0,
                    "created": T0.timestamp() - 3600,
                }
            )
        delay = p.get("properties", {}).get("quota.preemption.delay", "0s")
        seconds = int(delay[:-1]) * (60 if delay.endswith("m") else 1)
        children.append({"name": p["name"], "quota_preemption_delay": seconds, "children": leaves})
    return {
        "now": T0.timestamp(),
        "partition": {"quota_preemption_enabled": True},
        "queues": {"name": "root", "children": children},
        "nodes": [{"id": "n1", "capacity": {"vcore": 10**6, "memory": 2**50}}],
        "allocations": allocations,
    }


def _snapshot(partition: str, round_: int, minutes: float, **kw: Any) -> None:
    from dashboard import services

    shown = kw.pop("shown_max", None)
    services.store_snapshot(
        partition_name=partition,
        source_kind="scenario",
        captured_at=at(minutes),
        scenario=_scenario(partition, round_, shown),
        now=at(minutes),
        **kw,
    )


def _event(partition: str, event_id: int, queue: str, minutes: float, vcore: int) -> None:
    from dashboard import models

    models.ObservedMaxChange.objects.create(
        partition=models.Partition.objects.get(name=partition),
        instance_uuid="sched-1",
        event_id=event_id,
        queue=queue,
        time=at(minutes),
        new_max={"vcore": vcore * 1000, "memory": vcore * GI},
    )


def run_sequence(user: Any) -> None:
    """The imports (and what happens between them), all at fixed times."""
    from dashboard import models, services

    services.import_config(config_text(0).encode(), now=at(0))
    models.Partition.objects.filter(name="batch").update(timer_rules="seed")
    _snapshot("default", 0, 1)
    _snapshot("batch", 0, 1)
    # QUEUE_MAX events: x2's max to 9, then to 8 (the scheduler's time of round 1's change,
    # and the max before it by the scheduler's clock)
    _event("default", 1, "root.a.x2", 1.5, 9)
    _event("default", 2, "root.a.x2", 2.5, 8)
    services.import_config(config_text(1).encode(), now=at(3))
    # a change planned in the dashboard, which round 2 shows applied
    partition = models.Partition.objects.get(name="default")
    services.schedule_quota_change(
        partition, "root.b.y1", new_max={"vcore": 7000, "memory": 7 * GI}, user=user, now=at(4)
    )
    # the scheduler enforced x1's lowered max itself (its waiting change is done)
    change = models.QuotaChange.objects.get(partition=partition, queue_path="root.a.x1")
    models.PreemptionRun.objects.create(
        partition=partition,
        kind=models.PreemptionRun.Kind.QUOTA,
        trigger=models.PreemptionRun.Trigger.OBSERVED,
        status=models.PreemptionRun.Status.DONE,
        queue="root.a.x1",
        request={"max": change.new_max},
        queued_at=at(4.5),
    )
    services.import_config(config_text(2).encode(), now=at(6))
    # the cluster runs round 3's x6 already; the scheduler reports its timer start
    _snapshot(
        "default",
        2,
        7,
        shown_max={"root.a.x6": 3},
        scheduler_timers={
            "root.a.x6": {
                "changed_at": at(6.5).timestamp(),
                "fires_at": at(11.5).timestamp(),
                "source": "quotaPreemptionStartTime",
            }
        },
    )
    services.import_config(config_text(3).encode(), now=at(8))
    # the cluster shows round 4's y2 already (the snapshot's capture times the change)
    _snapshot("default", 3, 9, shown_max={"root.b.y2": 2})
    services.import_config(config_text(4).encode(), now=at(10), user=user)
    # the same config, rewritten (a comment): no new version; then the same text again
    services.import_config(config_text(4, comment="# re-sent\n").encode(), now=at(11))
    services.import_config(config_text(4, comment="# re-sent\n").encode(), now=at(12))
    services.import_config(config_text(5).encode(), now=at(13))


#: the models a config import writes
MODELS = ("Cluster", "Partition", "ConfigVersion", "ConfigQueue", "QuotaChange", "Alert")
#: models whose rows those point at or name in text (only their places are kept)
REFERENCED = ("ClusterSnapshot", "PreemptionRun")
_IDS = re.compile(r"\b(change|snapshot|run|changes) (\d+)")
_TEXT_MODEL = {
    "change": "QuotaChange",
    "changes": "QuotaChange",
    "snapshot": "ClusterSnapshot",
    "run": "PreemptionRun",
}


def stored_rows() -> dict[str, list[dict[str, Any]]]:
    """Every row of :data:`MODELS`, field by field, in primary-key order: keys (and ids
    named in text) as each row's place in its table, wall-clock fields left out."""
    from django.db.models import DateTimeField, ForeignKey

    from dashboard import models

    places: dict[str, dict[int, int]] = {}
    for name in MODELS + REFERENCED:
        pks = getattr(models, name).objects.order_by("pk").values_list("pk", flat=True)
        places[name] = {pk: i for i, pk in enumerate(pks)}

    def text(value: str) -> str:
        def sub(m: re.Match[str]) -> str:
            place = places[_TEXT_MODEL[m.group(1)]].get(int(m.group(2)))
            return f"{m.group(1)} #{place}" if place is not None else m.group(0)

        return _IDS.sub(sub, value)

    out: dict[str, list[dict[str, Any]]] = {}
    for name in MODELS:
        model = getattr(models, name)
        fields = [
            f
            for f in model._meta.concrete_fields
            if not (isinstance(f, DateTimeField) and (f.auto_now or f.auto_now_add))
        ]
        rows = []
        for row in model.objects.order_by("pk"):
            values: dict[str, Any] = {}
            for f in fields:
                if f.primary_key:
                    values["id"] = places[name][row.pk]
                    continue
                value = getattr(row, f.attname)
                if isinstance(f, ForeignKey):
                    target = f.remote_field.model._meta.object_name or ""
                    if value is not None and target in places:
                        value = f"{target} #{places[target][value]}"
                    elif value is not None:
                        value = f"{target} (set)"
                elif isinstance(value, datetime):
                    value = value.isoformat()
                elif isinstance(value, str):
                    value = text(value)
                values[f.name] = value
            rows.append(values)
        out[name] = rows
    plain: dict[str, list[dict[str, Any]]] = json.loads(json.dumps(out, default=str))
    return plain


def main(target: str) -> int:
    import os

    root = Path(__file__).resolve().parents[2]
    sys.path[:0] = [str(root), str(root / "tests" / "dashboard")]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.test.utils import setup_databases, teardown_databases

    old = setup_databases(verbosity=0, interactive=False)
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user("staff", is_staff=True)
            run_sequence(user)
            rows = stored_rows()
            transaction.set_rollback(True)
    finally:
        teardown_databases(old, verbosity=0)
    Path(target).write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    print(f"{target}: " + ", ".join(f"{len(v)} {k}" for k, v in rows.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))

"""YuniKorn's own figures and facts in the snapshot rows.

Queues get ``allocated`` as reported, ``status``, ``dynamic``,
``max_applications`` and ``running_apps``; nodes ``reported_capacity``,
``occupied`` and ``foreign_pods``; allocations ``placeholder``,
``placeholder_used`` and ``task_group``. Existing snapshots are filled from
their stored scenario where it holds the facts, otherwise with what a plain
scenario means: allocated = usage + preempting, Active, not dynamic, reported
capacity = capacity, nothing occupied, no placeholders.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.db import migrations, models

STATUSES = ("Active", "Draining", "Stopped")


def _resource(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(t): int(q) for t, q in value.items() if isinstance(q, int) and not isinstance(q, bool)
    }


def _queues(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    root = doc.get("queues")
    if not isinstance(root, Mapping):
        return
    stack: list[tuple[str, Mapping[str, Any]]] = [("root", root)]
    while stack:
        path, q = stack.pop()
        yield path, q
        for c in q.get("children") or ():
            if isinstance(c, Mapping):
                stack.append((f"{path}.{c.get('name')}", c))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def fill_facts(apps: Any, schema_editor: Any) -> None:
    snapshot_model = apps.get_model("dashboard", "ClusterSnapshot")
    queue_model = apps.get_model("dashboard", "SnapshotQueue")
    node_model = apps.get_model("dashboard", "SnapshotNode")
    alloc_model = apps.get_model("dashboard", "SnapshotAllocation")
    for snap_id, doc in snapshot_model.objects.values_list("id", "scenario").iterator():
        doc = doc if isinstance(doc, Mapping) else {}
        facts = dict(_queues(doc))
        queues = list(queue_model.objects.filter(snapshot_id=snap_id))
        for row in queues:
            q = facts.get(row.path, {})
            if "allocated" in q:
                row.allocated = _resource(q["allocated"])
            else:
                allocated = dict(_resource(row.usage))
                for t, v in _resource(row.preempting).items():
                    allocated[t] = allocated.get(t, 0) + v
                row.allocated = allocated
            row.status = q.get("status") if q.get("status") in STATUSES else "Active"
            row.dynamic = q.get("dynamic") is True
            row.max_applications = _count(q.get("max_applications")) or None
            row.running_apps = _count(q.get("running_apps"))
        queue_model.objects.bulk_update(
            queues, ["allocated", "status", "dynamic", "max_applications", "running_apps"], 1000
        )
        node_facts = {str(n.get("id")): n for n in doc.get("nodes") or () if isinstance(n, Mapping)}
        nodes = list(node_model.objects.filter(snapshot_id=snap_id))
        for row in nodes:
            n = node_facts.get(row.node_id, {})
            row.reported_capacity = (
                _resource(n["reported_capacity"])
                if "reported_capacity" in n
                else _resource(row.capacity)
            )
            row.occupied = _resource(n.get("occupied"))
            pods = n.get("foreign_pods")
            row.foreign_pods = list(pods) if isinstance(pods, list) else []
        node_model.objects.bulk_update(
            nodes, ["reported_capacity", "occupied", "foreign_pods"], 1000
        )
        gang = {
            str(a.get("key")): a
            for a in doc.get("allocations") or ()
            if isinstance(a, Mapping)
            and (a.get("placeholder") or a.get("placeholder_used") or a.get("task_group"))
        }
        if not gang:
            continue
        allocs = list(alloc_model.objects.filter(snapshot_id=snap_id, key__in=list(gang)))
        for row in allocs:
            a = gang[row.key]
            row.placeholder = a.get("placeholder") is True
            row.placeholder_used = a.get("placeholder_used") is True
            group = a.get("task_group")
            row.task_group = group[:255] if isinstance(group, str) else ""
        alloc_model.objects.bulk_update(
            allocs, ["placeholder", "placeholder_used", "task_group"], 1000
        )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0008_cluster"),
    ]

    operations = [
        migrations.AddField(
            model_name="snapshotallocation",
            name="placeholder",
            field=models.BooleanField(default=False, help_text="a gang-scheduling placeholder"),
        ),
        migrations.AddField(
            model_name="snapshotallocation",
            name="placeholder_used",
            field=models.BooleanField(
                default=False, help_text="a real allocation that replaced a placeholder"
            ),
        ),
        migrations.AddField(
            model_name="snapshotallocation",
            name="task_group",
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.AddField(
            model_name="snapshotnode",
            name="foreign_pods",
            field=models.JSONField(
                blank=True, default=list, help_text="those pods: key, namespace/name, resources"
            ),
        ),
        migrations.AddField(
            model_name="snapshotnode",
            name="occupied",
            field=models.JSONField(
                blank=True, default=dict, help_text="what pods not scheduled by YuniKorn hold"
            ),
        ),
        migrations.AddField(
            model_name="snapshotnode",
            name="reported_capacity",
            field=models.JSONField(
                blank=True, default=dict, help_text="capacity as reported (capacity + occupied)"
            ),
        ),
        migrations.AddField(
            model_name="snapshotqueue",
            name="allocated",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="allocatedResource as reported (preempting included)",
            ),
        ),
        migrations.AddField(
            model_name="snapshotqueue",
            name="dynamic",
            field=models.BooleanField(
                default=False, help_text="made from a parent's child template"
            ),
        ),
        migrations.AddField(
            model_name="snapshotqueue",
            name="max_applications",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="maxapplications (maxRunningApps); empty when unlimited",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="snapshotqueue",
            name="running_apps",
            field=models.PositiveIntegerField(
                blank=True, help_text="runningApps as reported; empty when not reported", null=True
            ),
        ),
        migrations.AddField(
            model_name="snapshotqueue",
            name="status",
            field=models.CharField(
                choices=[("Active", "Active"), ("Draining", "Draining"), ("Stopped", "Stopped")],
                default="Active",
                max_length=10,
            ),
        ),
        migrations.RunPython(fill_facts, migrations.RunPython.noop),
    ]

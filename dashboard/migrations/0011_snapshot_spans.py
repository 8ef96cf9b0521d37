# Nodes, applications and allocations stored once per span of consecutive snapshots,
# instead of one row per snapshot (and the nodes and allocations again in the scenario JSON).

import hashlib
import json

import django.db.models.deletion
from django.db import migrations, models

ALLOCATION_FIELDS = (
    "key",
    "app",
    "queue",
    "node",
    "resources",
    "priority",
    "originator",
    "allow_preemption",
    "required_node",
    "preempted",
    "created",
)
EXTRA_FIELDS = ("placeholder", "placeholder_used", "task_group")
EXTRA_DEFAULTS = (False, False, "")
NODE_FIELDS = (
    "node_id",
    "capacity",
    "allocated",
    "schedulable",
    "reported_capacity",
    "occupied",
    "foreign_pods",
)
APPLICATION_FIELDS = ("app_id", "queue", "state", "used", "pending", "details")
BATCH = 2000


def _hash(text):
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def allocation_digest(content):
    # the same hash as dashboard.services.snapshots.spans.allocation_digest (frozen here)
    resources = content[4]
    created = content[10]
    return _hash(
        repr((*content[:4], sorted(resources.items()), *content[5:10], float(created), *content[11:]))
    )


def json_digest(content):
    # the same hash as dashboard.services.snapshots.spans.json_digest (frozen here)
    return _hash(json.dumps(list(content), sort_keys=True, separators=(",", ":")))


def _immediate(schema_editor):
    # rows written and tables changed in one migration: no deferred checks left pending
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _kinds(apps):
    """(old per-snapshot model, span model, content fields, read fields, digest) per kind."""
    Row = apps.get_model("dashboard", "SnapshotAllocation")
    have = {f.name for f in Row._meta.get_fields()}
    extras = tuple(f for f in EXTRA_FIELDS if f in have)  # columns added beside the engine's

    def allocation_content(values):
        by_name = dict(zip((*ALLOCATION_FIELDS, *extras), values, strict=True))
        by_name["resources"] = dict(by_name["resources"] or {})
        return (
            *(by_name[f] for f in ALLOCATION_FIELDS),
            *(by_name.get(f, d) for f, d in zip(EXTRA_FIELDS, EXTRA_DEFAULTS, strict=True)),
        )

    return (
        (
            Row,
            apps.get_model("dashboard", "AllocationSpan"),
            ALLOCATION_FIELDS + EXTRA_FIELDS,
            ALLOCATION_FIELDS + extras,
            allocation_content,
            allocation_digest,
        ),
        (
            apps.get_model("dashboard", "SnapshotNode"),
            apps.get_model("dashboard", "NodeSpan"),
            NODE_FIELDS,
            NODE_FIELDS,
            tuple,
            json_digest,
        ),
        (
            apps.get_model("dashboard", "SnapshotApplication"),
            apps.get_model("dashboard", "ApplicationSpan"),
            APPLICATION_FIELDS,
            APPLICATION_FIELDS,
            tuple,
            json_digest,
        ),
    )


def rows_to_spans(apps, schema_editor):
    """Each partition's snapshots in id order: equal consecutive rows share a span."""
    _immediate(schema_editor)
    Partition = apps.get_model("dashboard", "Partition")
    Snapshot = apps.get_model("dashboard", "ClusterSnapshot")
    kinds = _kinds(apps)
    for partition_id in Partition.objects.order_by("pk").values_list("pk", flat=True):
        snapshot_ids = list(
            Snapshot.objects.filter(partition_id=partition_id).order_by("pk").values_list("pk", flat=True)
        )
        for Row, Span, fields, read, content_of, digest_of in kinds:
            open_ = {}  # key -> (digest, content, first snapshot id)
            pending = []

            def add(was, gone_in):
                digest, content, first_seen = was
                pending.append(
                    Span(
                        partition_id=partition_id,
                        first_seen=first_seen,
                        gone_in=gone_in,
                        digest=digest,
                        **dict(zip(fields, content, strict=True)),
                    )
                )
                if len(pending) >= BATCH:
                    Span.objects.bulk_create(pending)
                    pending.clear()

            for snapshot_id in snapshot_ids:
                seen = set()
                rows = Row.objects.filter(snapshot_id=snapshot_id).order_by(read[0])
                for values in rows.values_list(*read).iterator(chunk_size=BATCH):
                    content = content_of(values)
                    key = content[0]
                    seen.add(key)
                    digest = digest_of(content)
                    was = open_.get(key)
                    if was is not None and was[0] == digest:
                        continue
                    if was is not None:
                        add(was, snapshot_id)
                    open_[key] = (digest, content, snapshot_id)
                for key in [k for k in open_ if k not in seen]:
                    add(open_.pop(key), snapshot_id)
            for was in open_.values():
                add(was, None)
            Span.objects.bulk_create(pending)
    for snap in Snapshot.objects.order_by("pk").only("pk", "scenario").iterator(chunk_size=100):
        scenario = dict(snap.scenario or {})
        if "nodes" in scenario or "allocations" in scenario:
            scenario.pop("nodes", None)
            scenario.pop("allocations", None)
            Snapshot.objects.filter(pk=snap.pk).update(scenario=scenario)


# the order of a node's and an allocation's JSON object in a scenario (engine.scenario)
_NODE_DOC = (("id", "node_id"), ("capacity", "capacity"), ("schedulable", "schedulable"))
_ALLOCATION_DOC = (
    "key",
    "app",
    "queue",
    "node",
    "resources",
    "priority",
    "originator",
    "allow_preemption",
    "created",
    "required_node",
    "preempted",
)


def spans_to_rows(apps, schema_editor):
    """Back to one row per snapshot and item, and the nodes and allocations in the JSON."""
    _immediate(schema_editor)
    Snapshot = apps.get_model("dashboard", "ClusterSnapshot")
    kinds = _kinds(apps)
    for snap in Snapshot.objects.order_by("pk"):
        scenario = dict(snap.scenario or {})
        for Row, Span, fields, read, _content, _digest in kinds:
            spans = (
                Span.objects.filter(partition_id=snap.partition_id, first_seen__lte=snap.pk)
                .filter(models.Q(gone_in__isnull=True) | models.Q(gone_in__gt=snap.pk))
                .order_by(read[0])
            )
            rows = []
            for values in spans.values_list(*read).iterator(chunk_size=BATCH):
                rows.append(dict(zip(read, values, strict=True)))
            Row.objects.bulk_create((Row(snapshot_id=snap.pk, **r) for r in rows), batch_size=BATCH)
            if Span._meta.model_name == "allocationspan":
                scenario["allocations"] = [{f: r[f] for f in _ALLOCATION_DOC} for r in rows]
            elif Span._meta.model_name == "nodespan":
                scenario["nodes"] = [{k: r[f] for k, f in _NODE_DOC} for r in rows]
        Snapshot.objects.filter(pk=snap.pk).update(scenario=scenario)


class Migration(migrations.Migration):

    dependencies = [
        ("dashboard", "0010_scheduler_clock"),
    ]

    operations = [
        migrations.CreateModel(
            name="AllocationSpan",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen", models.BigIntegerField(help_text="id of the first snapshot holding it")),
                ("gone_in", models.BigIntegerField(blank=True, help_text="id of the first later snapshot without it", null=True)),
                ("digest", models.CharField(help_text="hash of its content, to spot changes", max_length=16)),
                ("key", models.CharField(max_length=500)),
                ("app", models.CharField(blank=True, max_length=255)),
                ("queue", models.CharField(max_length=1000)),
                ("node", models.CharField(max_length=255)),
                ("resources", models.JSONField(default=dict)),
                ("priority", models.IntegerField(default=0)),
                ("originator", models.BooleanField(default=False)),
                ("allow_preemption", models.BooleanField(default=True)),
                ("required_node", models.BooleanField(default=False)),
                ("preempted", models.BooleanField(default=False)),
                ("created", models.FloatField(default=0.0)),
                ("placeholder", models.BooleanField(default=False, help_text="a gang-scheduling placeholder")),
                ("placeholder_used", models.BooleanField(default=False, help_text="a real allocation that replaced a placeholder")),
                ("task_group", models.CharField(blank=True, max_length=255)),
                ("partition", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="dashboard.partition")),
            ],
            options={
                "ordering": ["partition", "key", "first_seen"],
            },
        ),
        migrations.CreateModel(
            name="ApplicationSpan",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen", models.BigIntegerField(help_text="id of the first snapshot holding it")),
                ("gone_in", models.BigIntegerField(blank=True, help_text="id of the first later snapshot without it", null=True)),
                ("digest", models.CharField(help_text="hash of its content, to spot changes", max_length=16)),
                ("app_id", models.CharField(max_length=255)),
                ("queue", models.CharField(blank=True, max_length=1000)),
                ("state", models.CharField(blank=True, max_length=50)),
                ("used", models.JSONField(blank=True, default=dict)),
                ("pending", models.JSONField(blank=True, default=dict)),
                ("details", models.JSONField(blank=True, default=dict)),
                ("partition", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="dashboard.partition")),
            ],
            options={
                "ordering": ["partition", "app_id", "first_seen"],
            },
        ),
        migrations.CreateModel(
            name="NodeSpan",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("first_seen", models.BigIntegerField(help_text="id of the first snapshot holding it")),
                ("gone_in", models.BigIntegerField(blank=True, help_text="id of the first later snapshot without it", null=True)),
                ("digest", models.CharField(help_text="hash of its content, to spot changes", max_length=16)),
                ("node_id", models.CharField(max_length=255)),
                ("capacity", models.JSONField(default=dict)),
                ("allocated", models.JSONField(blank=True, default=dict)),
                ("schedulable", models.BooleanField(default=True)),
                ("reported_capacity", models.JSONField(blank=True, default=dict, help_text="capacity as reported (capacity + occupied)")),
                ("occupied", models.JSONField(blank=True, default=dict, help_text="what pods not scheduled by YuniKorn hold")),
                ("foreign_pods", models.JSONField(blank=True, default=list, help_text="those pods: key, namespace/name, resources")),
                ("partition", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="dashboard.partition")),
            ],
            options={
                "ordering": ["partition", "node_id", "first_seen"],
            },
        ),
        migrations.AddIndex(
            model_name="allocationspan",
            index=models.Index(fields=["partition", "gone_in", "first_seen"], name="alloc_span_window"),
        ),
        migrations.AddConstraint(
            model_name="allocationspan",
            constraint=models.UniqueConstraint(fields=("partition", "key", "first_seen"), name="allocation_span_unique"),
        ),
        migrations.AddIndex(
            model_name="applicationspan",
            index=models.Index(fields=["partition", "gone_in", "first_seen"], name="app_span_window"),
        ),
        migrations.AddConstraint(
            model_name="applicationspan",
            constraint=models.UniqueConstraint(fields=("partition", "app_id", "first_seen"), name="app_span_unique"),
        ),
        migrations.AddIndex(
            model_name="nodespan",
            index=models.Index(fields=["partition", "gone_in", "first_seen"], name="node_span_window"),
        ),
        migrations.AddConstraint(
            model_name="nodespan",
            constraint=models.UniqueConstraint(fields=("partition", "node_id", "first_seen"), name="node_span_unique"),
        ),
        migrations.RunPython(rows_to_spans, spans_to_rows),
        migrations.DeleteModel(
            name="SnapshotAllocation",
        ),
        migrations.DeleteModel(
            name="SnapshotApplication",
        ),
        migrations.DeleteModel(
            name="SnapshotNode",
        ),
    ]

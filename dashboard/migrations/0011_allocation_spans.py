# Allocations stored once per span of consecutive snapshots instead of once per snapshot.

import hashlib

import django.db.models.deletion
from django.db import migrations, models

ENGINE_FIELDS = (
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
BATCH = 2000


def _digest(content):
    # the same hash as dashboard.services.allocation_spans._digest (frozen here)
    resources = content[4]
    created = content[10]
    text = repr((*content[:4], sorted(resources.items()), *content[5:10], float(created), *content[11:]))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _immediate(schema_editor):
    # rows written and tables changed in one migration: no deferred checks left pending
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def rows_to_spans(apps, schema_editor):
    """Each partition's snapshots in id order: equal consecutive allocations share a span."""
    _immediate(schema_editor)
    Partition = apps.get_model("dashboard", "Partition")
    Snapshot = apps.get_model("dashboard", "ClusterSnapshot")
    Row = apps.get_model("dashboard", "SnapshotAllocation")
    Span = apps.get_model("dashboard", "AllocationSpan")
    have = {f.name for f in Row._meta.get_fields()}
    extras = [f for f in EXTRA_FIELDS if f in have]  # columns added beside the engine's
    for partition_id in Partition.objects.order_by("pk").values_list("pk", flat=True):
        open_ = {}  # key -> (digest, content, first snapshot id)
        pending = []

        def flush(force=False):
            if pending and (force or len(pending) >= BATCH):
                Span.objects.bulk_create(pending)
                pending.clear()

        for snap in Snapshot.objects.filter(partition_id=partition_id).order_by("pk"):
            seen = set()
            rows = Row.objects.filter(snapshot_id=snap.pk).order_by("key")
            for values in rows.values_list(*ENGINE_FIELDS, *extras).iterator(chunk_size=BATCH):
                have_extras = dict(zip(extras, values[len(ENGINE_FIELDS) :], strict=True))
                content = (
                    *values[: len(ENGINE_FIELDS)],
                    *(have_extras.get(f, d) for f, d in zip(EXTRA_FIELDS, EXTRA_DEFAULTS, strict=True)),
                )
                content = (*content[:4], dict(content[4] or {}), *content[5:])
                key = content[0]
                seen.add(key)
                digest = _digest(content)
                was = open_.get(key)
                if was is not None and was[0] == digest:
                    continue
                if was is not None:
                    pending.append(_span(Span, partition_id, was, gone_in=snap.pk))
                open_[key] = (digest, content, snap.pk)
                flush()
            for key in [k for k in open_ if k not in seen]:
                pending.append(_span(Span, partition_id, open_.pop(key), gone_in=snap.pk))
                flush()
            scenario = dict(snap.scenario or {})
            if "allocations" in scenario:
                scenario.pop("allocations")
                Snapshot.objects.filter(pk=snap.pk).update(scenario=scenario)
        for was in open_.values():
            pending.append(_span(Span, partition_id, was, gone_in=None))
            flush()
        flush(force=True)


def _span(Span, partition_id, was, gone_in):
    digest, content, first_seen = was
    fields = dict(zip(ENGINE_FIELDS + EXTRA_FIELDS, content, strict=True))
    return Span(
        partition_id=partition_id, first_seen=first_seen, gone_in=gone_in, digest=digest, **fields
    )


def spans_to_rows(apps, schema_editor):
    """Back to one row per snapshot and allocation, and the allocations in the scenario JSON."""
    _immediate(schema_editor)
    Snapshot = apps.get_model("dashboard", "ClusterSnapshot")
    Row = apps.get_model("dashboard", "SnapshotAllocation")
    Span = apps.get_model("dashboard", "AllocationSpan")
    have = {f.name for f in Row._meta.get_fields()}
    extras = [f for f in EXTRA_FIELDS if f in have]
    for snap in Snapshot.objects.order_by("pk"):
        spans = (
            Span.objects.filter(partition_id=snap.partition_id, first_seen__lte=snap.pk)
            .filter(models.Q(gone_in__isnull=True) | models.Q(gone_in__gt=snap.pk))
            .order_by("key")
        )
        rows = []
        doc_allocations = []
        for values in spans.values_list(*ENGINE_FIELDS, *extras).iterator(chunk_size=BATCH):
            fields = dict(zip((*ENGINE_FIELDS, *extras), values, strict=True))
            rows.append(Row(snapshot_id=snap.pk, **fields))
            doc_allocations.append({f: fields[f] for f in _DOC_ORDER})
        Row.objects.bulk_create(rows, batch_size=BATCH)
        scenario = dict(snap.scenario or {})
        scenario["allocations"] = doc_allocations
        Snapshot.objects.filter(pk=snap.pk).update(scenario=scenario)


# the order of an allocation's JSON object in a scenario (engine.scenario.allocation_to_dict)
_DOC_ORDER = (
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


class Migration(migrations.Migration):

    dependencies = [
        ("dashboard", "0007_observed_runs"),
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
                ("placeholder", models.BooleanField(default=False)),
                ("placeholder_used", models.BooleanField(default=False)),
                ("task_group", models.CharField(blank=True, max_length=255)),
                ("partition", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="allocation_spans", to="dashboard.partition")),
            ],
            options={
                "ordering": ["partition", "key", "first_seen"],
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
        migrations.RunPython(rows_to_spans, spans_to_rows),
        migrations.DeleteModel(
            name="SnapshotAllocation",
        ),
    ]

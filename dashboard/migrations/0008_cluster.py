"""Clusters: every partition belongs to one; partition names are unique per cluster.

Existing partitions move into one cluster, named after the ``clusterId`` the stored
snapshots carry (the ``cluster_id`` key of their scenario) when they all agree,
else ``default``.
"""

import django.db.models.deletion
from django.db import migrations, models

FALLBACK = "default"


def _stored_cluster_id(Snapshot):
    """The one clusterId every stored snapshot that names one agrees on, else None."""
    found = set()
    for scenario in Snapshot.objects.values_list("scenario", flat=True).iterator():
        value = scenario.get("cluster_id") if isinstance(scenario, dict) else None
        if isinstance(value, str) and value:
            found.add(value[:200])
        else:
            found.add(None)
        if len(found) > 1:
            return None
    (only,) = found or {None}
    return only


def into_one_cluster(apps, schema_editor):
    Partition = apps.get_model("dashboard", "Partition")
    if not Partition.objects.exists():
        return
    Cluster = apps.get_model("dashboard", "Cluster")
    cluster_id = _stored_cluster_id(apps.get_model("dashboard", "ClusterSnapshot"))
    cluster = Cluster.objects.create(name=cluster_id or FALLBACK, cluster_id=cluster_id or "")
    Partition.objects.update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0007_observed_runs"),
    ]

    operations = [
        migrations.CreateModel(
            name="Cluster",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, unique=True)),
                (
                    "cluster_id",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="YuniKorn's clusterId, when known",
                        max_length=200,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.AddField(
            model_name="importjob",
            name="cluster",
            field=models.CharField(
                blank=True,
                help_text="the cluster to import into (empty: the only one)",
                max_length=200,
            ),
        ),
        migrations.AddField(
            model_name="partition",
            name="cluster",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="partitions",
                to="dashboard.cluster",
            ),
        ),
        migrations.RunPython(into_one_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="partition",
            name="cluster",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="partitions",
                to="dashboard.cluster",
            ),
        ),
        migrations.AlterModelOptions(
            name="partition",
            options={"ordering": ["cluster__name", "name"]},
        ),
        migrations.AlterField(
            model_name="partition",
            name="name",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="partition",
            constraint=models.UniqueConstraint(
                fields=("cluster", "name"), name="partition_name_per_cluster"
            ),
        ),
    ]

"""A source belongs to a cluster: one source per cluster and partition.

Existing sources join the one cluster the dashboard migration made for the stored
partitions (``default`` when nothing was stored yet).
"""

from typing import Any

import django.core.validators
import django.db.models.deletion
from django.db import migrations, models


def into_one_cluster(apps: Any, schema_editor: Any) -> None:
    Source = apps.get_model("sources", "ClusterSource")
    if not Source.objects.exists():
        return
    Cluster = apps.get_model("dashboard", "Cluster")
    cluster = Cluster.objects.order_by("pk").first()
    if cluster is None:
        cluster = Cluster.objects.create(name="default")
    Source.objects.update(cluster=cluster)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0008_cluster"),
        ("sources", "0003_events_position"),
    ]

    operations = [
        migrations.AddField(
            model_name="clustersource",
            name="cluster",
            field=models.ForeignKey(
                null=True,
                help_text="the dashboard cluster its snapshots are stored under",
                on_delete=django.db.models.deletion.CASCADE,
                related_name="sources",
                to="dashboard.cluster",
            ),
        ),
        migrations.RunPython(into_one_cluster, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="clustersource",
            name="cluster",
            field=models.ForeignKey(
                help_text="the dashboard cluster its snapshots are stored under",
                on_delete=django.db.models.deletion.CASCADE,
                related_name="sources",
                to="dashboard.cluster",
            ),
        ),
        migrations.AlterField(
            model_name="clustersource",
            name="partition",
            field=models.CharField(
                default="default",
                help_text="the YuniKorn partition to read; snapshots are stored under this "
                "partition of the source's cluster (one source per cluster and partition)",
                max_length=200,
                validators=[
                    django.core.validators.RegexValidator(
                        "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,199}$",
                        "a partition name: letters, digits, '_', '.', '-' "
                        "(YuniKorn's default is 'default')",
                    )
                ],
            ),
        ),
        migrations.AddConstraint(
            model_name="clustersource",
            constraint=models.UniqueConstraint(
                fields=("cluster", "partition"), name="one_source_per_cluster_partition"
            ),
        ),
    ]

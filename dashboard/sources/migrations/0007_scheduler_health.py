"""A source keeps what its scheduler's healthcheck and /ws/v1/clusters said last."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0006_stream_follow"),
    ]

    operations = [
        migrations.AddField(
            model_name="clustersource",
            name="scheduler_health",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the scheduler's healthcheck and build as last read (sources.health)",
            ),
        ),
        migrations.AddField(
            model_name="clustersource",
            name="scheduler_unhealthy_since",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]

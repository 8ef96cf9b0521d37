"""A source keeps the scheduler's per-user and per-group usage as last read."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0007_scheduler_health"),
    ]

    operations = [
        migrations.AddField(
            model_name="clustersource",
            name="usage_tracking",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="the scheduler's per-user and per-group usage as last read (sources.ugm)",
            ),
        ),
    ]

"""A restart's recovery: when the scheduler got its allocations back (the shim's replay)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0029_quotachange_superseded_label")]

    operations = [
        migrations.AddField(
            model_name="schedulerstart",
            name="recovered_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="when the scheduler recovered its allocations; timers re-arm from it",
            ),
        ),
        migrations.AddField(
            model_name="schedulerstart",
            name="awaiting_recovery",
            field=models.BooleanField(
                default=False,
                help_text="the partition was empty after the restart: timers re-arm at recovery",
            ),
        ),
    ]

"""Repeated identical alerts are grouped: a count and the time of the last one."""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def last_seen_is_created(apps: Any, schema_editor: Any) -> None:
    alert = apps.get_model("dashboard", "Alert")
    alert.objects.update(last_seen_at=models.F("created_at"))


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0004_configversion_planned")]

    operations = [
        migrations.AddField(
            model_name="alert",
            name="count",
            field=models.PositiveIntegerField(
                default=1, help_text="how many times this alert was raised while unread"
            ),
        ),
        migrations.AddField(
            model_name="alert",
            name="last_seen_at",
            field=models.DateTimeField(null=True, help_text="when it was raised last"),
        ),
        migrations.RunPython(last_seen_is_created, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="alert",
            name="last_seen_at",
            field=models.DateTimeField(help_text="when it was raised last"),
        ),
    ]

"""A quota change's own ``cleared`` state: its timer cleared at the scheduler's check.

Changes the sweep cleared before the state existed ended ``done`` (applied in the
cluster) or ``fired`` (planned here), their reason starting "timer cleared at the
scheduler's check"; they become ``cleared``. Going back, they return to the state they
had (``done`` when applied, ``fired`` when planned).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

CLEARED_REASON = "timer cleared at the scheduler's check"


def to_cleared(apps: Any, schema_editor: Any) -> None:
    QuotaChange = apps.get_model("dashboard", "QuotaChange")
    QuotaChange.objects.filter(
        state__in=["done", "fired"], reason__startswith=CLEARED_REASON, run__isnull=True
    ).update(state="cleared")


def from_cleared(apps: Any, schema_editor: Any) -> None:
    QuotaChange = apps.get_model("dashboard", "QuotaChange")
    cleared = QuotaChange.objects.filter(state="cleared")
    cleared.filter(applied_at__isnull=False).update(state="done")
    cleared.filter(applied_at__isnull=True).update(state="fired")


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0033_merge_scheduler_recovery")]

    operations = [
        migrations.AlterField(
            model_name="quotachange",
            name="state",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("waiting", "Waiting"),
                    ("reset", "Superseded by a later change"),
                    ("cancelled_by_increase", "Cancelled by an increase"),
                    ("cancelled", "Cancelled"),
                    ("running", "Running"),
                    ("fired", "Fired: predicted here, awaiting the scheduler"),
                    ("done", "Done"),
                    ("cleared", "Cleared: usage within the max at the scheduler's check"),
                    ("skipped", "Skipped (preemption running)"),
                    ("failed", "Failed"),
                ],
                default="pending",
                max_length=30,
            ),
        ),
        migrations.RunPython(to_cleared, from_cleared),
    ]

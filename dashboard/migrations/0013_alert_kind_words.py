# Alert kinds keep the dashboard's predictions and the scheduler's observations apart:
# "quota" is the dashboard's own timer firing (predicted), "quota_observed" the scheduler's
# quota preemption settling a waiting change.  Alerts of the second sort raised before
# this migration (kind "quota", message "<queue>: observed: the scheduler enforced ...")
# move to the new kind.

from django.db import migrations, models

OBSERVED_MARK = ": observed: the scheduler enforced change "


def forwards(apps, schema_editor):
    Alert = apps.get_model("dashboard", "Alert")
    Alert.objects.filter(kind="quota", message__contains=OBSERVED_MARK).update(
        kind="quota_observed"
    )


def backwards(apps, schema_editor):
    Alert = apps.get_model("dashboard", "Alert")
    Alert.objects.filter(kind="quota_observed").update(kind="quota")


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0012_snapshot_preemptable"),
    ]

    operations = [
        migrations.AlterField(
            model_name="alert",
            name="kind",
            field=models.CharField(
                choices=[
                    ("import_failed", "Import failed"),
                    ("import_warning", "Import warning"),
                    ("quota", "Quota timer fired (predicted)"),
                    ("quota_observed", "Quota preemption observed (scheduler)"),
                    ("timer", "Timer"),
                    ("change_skipped", "Change skipped"),
                    ("cancelled_by_increase", "Cancelled by increase"),
                    ("run_failed", "Run failed"),
                    ("engine", "Engine"),
                    ("source_failing", "Cluster source failing"),
                    ("source_recovered", "Cluster source recovered"),
                ],
                max_length=30,
            ),
        ),
        migrations.RunPython(forwards, backwards),
    ]

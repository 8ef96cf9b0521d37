"""PendingAsk.pod: the namespace/name of a pending ask's pod, read from its tags.

Asks stored before it have none (the pages then name the ask by its key).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0033_merge_scheduler_recovery"),
    ]

    operations = [
        migrations.AddField(
            model_name="pendingask",
            name="pod",
            field=models.CharField(
                blank=True,
                default="",
                help_text="namespace/name of the ask's pod (its tags), empty when unknown",
                max_length=600,
            ),
        ),
    ]

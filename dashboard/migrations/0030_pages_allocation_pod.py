"""AllocationSpan.pod: the namespace/name of an allocation's pod, read from its tags.

Spans stored before it have none (the pages then name the allocation by its key).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0029_quotachange_superseded_label"),
    ]

    operations = [
        migrations.AddField(
            model_name="allocationspan",
            name="pod",
            field=models.CharField(
                blank=True,
                help_text="namespace/name of the allocation's pod (its tags), empty when unknown",
                max_length=600,
            ),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sources", "0008_usage_tracking")]

    operations = [
        migrations.AddField(
            model_name="clustersource",
            name="faults",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="what was alerted of the source's faults (stale, events failing) and "
                "the warnings last raised per cause (dashboard.sources.faults)",
            ),
        ),
    ]

"""A source may follow the scheduler's event stream between full polls (off by default)."""

import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0005_config_seen"),
    ]

    operations = [
        migrations.AddField(
            model_name="clustersource",
            name="follow_stream",
            field=models.BooleanField(
                default=False,
                help_text="between full polls, follow the scheduler's event stream "
                "(/ws/v1/events/stream) and poll only when it reports a change",
            ),
        ),
        migrations.AddField(
            model_name="clustersource",
            name="last_cycle",
            field=models.CharField(
                blank=True,
                default="",
                help_text="what the last cycle following the stream did",
                max_length=500,
            ),
        ),
        migrations.AddField(
            model_name="clustersource",
            name="last_full_poll_at",
            field=models.DateTimeField(
                blank=True,
                help_text="when a cycle following the stream last fetched the whole state",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="clustersource",
            name="reconcile_interval",
            field=models.PositiveIntegerField(
                default=600,
                help_text="when following the stream: seconds after which a full poll is made "
                "regardless of what the stream said",
                validators=[
                    django.core.validators.MinValueValidator(5),
                    django.core.validators.MaxValueValidator(604800),
                ],
            ),
        ),
    ]

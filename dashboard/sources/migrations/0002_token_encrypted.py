# Source tokens encrypted at rest: the column type stays text; existing tokens are
# encrypted in place (and written back in plain text if the migration is reversed).

from typing import Any

from django.db import migrations
from django.db.models import TextField, Value

import dashboard.sources.models
import dashboard.sources.secrets


def encrypt_tokens(apps: Any, schema_editor: Any) -> None:
    source_model = apps.get_model("sources", "ClusterSource")
    for source in source_model.objects.exclude(token=""):
        source.save(update_fields=["token"])  # the field encrypts a plain value on save


def decrypt_tokens(apps: Any, schema_editor: Any) -> None:
    source_model = apps.get_model("sources", "ClusterSource")
    for source in source_model.objects.exclude(token=""):
        if isinstance(source.token, dashboard.sources.secrets.UndecryptableToken):
            continue  # no key opens it: leave it as it is
        plain = str(source.token)  # read through the field: decrypted
        source_model.objects.filter(pk=source.pk).update(
            token=Value(plain, output_field=TextField())
        )


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="clustersource",
            name="token",
            field=dashboard.sources.secrets.EncryptedTokenField(
                blank=True,
                default="",
                help_text="optional bearer token; write-only, never shown back, encrypted at rest",
                validators=[dashboard.sources.models.validate_token],
            ),
        ),
        migrations.RunPython(encrypt_tokens, decrypt_tokens),
    ]

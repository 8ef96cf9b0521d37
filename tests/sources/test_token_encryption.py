"""Source bearer tokens are encrypted at rest and survive a documented SECRET_KEY rotation."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import TextField, Value
from sources_helpers import T0, FakeYuniKorn, SleepRecorder

from dashboard.sources import secrets, services
from dashboard.sources.models import ClusterSource

TOKEN = "tok-7c1e-AT-REST-90ab"
OLD_KEY = "old-secret-key-" + "x" * 40
NEW_KEY = "new-secret-key-" + "y" * 40

pytestmark = pytest.mark.django_db


def stored_column(source: ClusterSource) -> str:
    """The token column as the database holds it (what a dump or a SQL user sees)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT token FROM {ClusterSource._meta.db_table} WHERE id = %s", [source.pk]
        )
        return str(cursor.fetchone()[0])


def test_the_database_never_holds_the_token_in_plain_text() -> None:
    source = ClusterSource.objects.create(name="acme", base_url="http://a:9080", token=TOKEN)
    raw = stored_column(source)
    assert raw.startswith(secrets.PREFIX)
    assert TOKEN not in raw
    assert ClusterSource.objects.get(pk=source.pk).token == TOKEN
    assert ClusterSource.objects.get(pk=source.pk).token_state == "set"
    # an empty token stays empty (no ciphertext that looks like a token)
    empty = ClusterSource.objects.create(name="open", base_url="http://b:9080", partition="p2")
    assert stored_column(empty) == ""
    assert ClusterSource.objects.get(pk=empty.pk).token_state == "not set"


def test_a_rotated_secret_key_in_the_fallbacks_still_decrypts_and_the_command_moves_it(
    settings: Any,
) -> None:
    settings.SECRET_KEY = OLD_KEY
    source = ClusterSource.objects.create(name="acme", base_url="http://a:9080", token=TOKEN)
    under_old = stored_column(source)
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = [OLD_KEY]
    assert ClusterSource.objects.get(pk=source.pk).token == TOKEN
    out = io.StringIO()
    call_command("reencrypt_source_tokens", stdout=out)
    assert "re-encrypted 1 source token(s)" in out.getvalue()
    assert stored_column(source) != under_old
    settings.SECRET_KEY_FALLBACKS = []
    assert ClusterSource.objects.get(pk=source.pk).token == TOKEN


def test_a_replaced_secret_key_fails_the_poll_clearly_and_loses_nothing(
    settings: Any, yunikorn: FakeYuniKorn
) -> None:
    settings.SECRET_KEY = OLD_KEY
    yunikorn.required_token = TOKEN
    source = ClusterSource.objects.create(name="acme", base_url=yunikorn.url, token=TOKEN)
    ciphertext = stored_column(source)
    settings.SECRET_KEY = NEW_KEY  # no fallback: nothing opens the stored token

    loaded = ClusterSource.objects.get(pk=source.pk)
    assert isinstance(loaded.token, secrets.UndecryptableToken)
    assert loaded.token_state == "set, but cannot be decrypted: enter it again"
    outcome = services.poll_source(
        source.pk, now=T0, fetch=services.default_fetcher(sleep=SleepRecorder())
    )
    assert outcome.status == "failed"
    assert "cannot be decrypted" in outcome.error
    assert yunikorn.seen == []  # no request went out without (or with a wrong) token
    loaded.refresh_from_db()
    assert "cannot be decrypted" in loaded.last_error
    loaded.save()  # a full save (admin, API) keeps the unreadable token as it was
    assert stored_column(source) == ciphertext
    with pytest.raises(CommandError, match="acme"):
        call_command("reencrypt_source_tokens", stdout=io.StringIO())
    assert stored_column(source) == ciphertext

    loaded.token = TOKEN  # staff enter it again
    loaded.save()
    again = services.poll_source(
        source.pk, now=T0, force=True, fetch=services.default_fetcher(sleep=SleepRecorder())
    )
    assert again.status == "stored"


def test_the_migration_encrypts_tokens_stored_before_it() -> None:
    migration = __import__(
        "dashboard.sources.migrations.0002_token_encrypted", fromlist=["encrypt_tokens"]
    )
    source = ClusterSource.objects.create(name="acme", base_url="http://a:9080")
    ClusterSource.objects.filter(pk=source.pk).update(token=Value(TOKEN, output_field=TextField()))
    assert stored_column(source) == TOKEN  # as the column held it before the migration
    assert ClusterSource.objects.get(pk=source.pk).token == TOKEN  # read as itself
    migration.encrypt_tokens(apps, None)
    assert stored_column(source).startswith(secrets.PREFIX)
    assert ClusterSource.objects.get(pk=source.pk).token == TOKEN
    migration.decrypt_tokens(apps, None)
    assert stored_column(source) == TOKEN

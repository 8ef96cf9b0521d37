"""``manage.py reencrypt_source_tokens``: move every source token to the current SECRET_KEY."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from dashboard.sources.models import ClusterSource
from dashboard.sources.secrets import UndecryptableToken


class Command(BaseCommand):
    help = (
        "Re-encrypt the cluster sources' bearer tokens with the current SECRET_KEY (run after "
        "moving the old key to SECRET_KEY_FALLBACKS). Exits 1 naming the sources whose token "
        "no key opens; their tokens must be entered again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        done: list[str] = []
        unreadable: list[str] = []
        with transaction.atomic():
            for source in (
                ClusterSource.objects.select_for_update().exclude(token="").order_by("name")
            ):
                if isinstance(source.token, UndecryptableToken):
                    unreadable.append(source.name)
                    continue
                source.token = str(source.token)  # plain again: saved under the current key
                source.save(update_fields=["token"])
                done.append(source.name)
        self.stdout.write(f"re-encrypted {len(done)} source token(s)")
        if unreadable:
            raise CommandError(
                "no key decrypts the token of: " + ", ".join(unreadable) + "; enter them again"
            )

"""``manage.py migrate_locked [APP_LABEL] [MIGRATION] [--source-url URL ...]``.

``migrate`` under a database-wide lock (a PostgreSQL session advisory lock), then the
default cluster source (``ensure_source``) when ``--source-url`` is given. The web
pods' init containers run it (``deploy/entrypoint.sh migrate``): pods starting at once
migrate one after another, the later ones finding nothing to apply, instead of racing
on the same tables. Other databases (SQLite) are migrated without a lock.
"""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections

# pg_advisory_lock's key: any fixed 64-bit number the dashboard's database uses for this
LOCK_KEY = 0x59_4B_44_41_53_48  # "YKDASH"


class Command(BaseCommand):
    help = "Migrate under a database lock, then create the default source if asked."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("app_label", nargs="?", help="as for migrate")
        parser.add_argument("migration_name", nargs="?", help="as for migrate")
        parser.add_argument("--source-url", default="", help="the default source's base URL")
        parser.add_argument("--source-name", default="yunikorn")
        parser.add_argument("--source-cluster", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        positional = [a for a in (options["app_label"], options["migration_name"]) if a]
        connection = connections[DEFAULT_DB_ALIAS]
        locked = connection.vendor == "postgresql"
        if locked:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
                (free,) = cursor.fetchone()
                if not free:
                    self.stdout.write("another process is migrating; waiting for it")
                    cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        try:
            call_command("migrate", *positional, interactive=False)
            if options["source_url"]:
                call_command(
                    "ensure_source",
                    name=options["source_name"],
                    base_url=options["source_url"],
                    cluster=options["source_cluster"],
                )
        finally:
            if locked:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])

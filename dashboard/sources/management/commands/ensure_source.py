"""``manage.py ensure_source --name N --base-url URL [--cluster C] [--partition P]``.

Creates the cluster source when no source of that name exists (with every check an
API create makes: the address policy, one source per cluster and partition); leaves an
existing one as it is, so an administrator's later edits survive every deployment.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.sources.api import ClusterSourceSerializer
from dashboard.sources.models import ClusterSource


class Command(BaseCommand):
    help = "Create a cluster source unless one of that name exists (deployments' default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--base-url", required=True)
        parser.add_argument("--cluster", default="default")
        parser.add_argument("--partition", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        name = str(options["name"])
        existing = ClusterSource.objects.filter(name=name).first()
        if existing is not None:
            self.stdout.write(f"source {name} exists ({existing.base_url}); left unchanged")
            return
        serializer = ClusterSourceSerializer(
            data={
                "name": name,
                "base_url": options["base_url"],
                "cluster": options["cluster"],
                "partition": options["partition"],
            }
        )
        if not serializer.is_valid():
            raise CommandError(f"source {name} refused: {dict(serializer.errors)}")
        source = serializer.save()
        self.stdout.write(f"source {name} created for {source.base_url}")

"""``manage.py poll_sources [--force] [NAME ...]``: poll cluster sources in this process."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.sources import services
from dashboard.sources.models import ClusterSource


class Command(BaseCommand):
    help = "Poll the due cluster sources now (or the named ones; --force ignores the interval)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="source names (default: every due source)")
        parser.add_argument("--force", action="store_true", help="poll even when not due")

    def handle(self, *args: Any, **options: Any) -> None:
        names: list[str] = list(options["names"])
        force = bool(options["force"])
        if names:
            found = dict(ClusterSource.objects.filter(name__in=names).values_list("name", "pk"))
            missing = [n for n in names if n not in found]
            if missing:
                raise CommandError(f"no cluster source named {', '.join(missing)}")
            outcomes = [services.poll_source(found[n], force=force) for n in names]
        elif force:
            ids = ClusterSource.objects.filter(enabled=True).values_list("pk", flat=True)
            outcomes = [services.poll_source(pk, force=True) for pk in ids]
        else:
            outcomes = services.poll_due_sources()
        failed = False
        for o in outcomes:
            name = ClusterSource.objects.filter(pk=o.source_id).values_list("name", flat=True)
            line = f"{name.first()}: {o.status}"
            if o.snapshot_id is not None:
                line += f" (snapshot {o.snapshot_id})"
            if o.error:
                line += f": {o.error}"
                failed = True
            self.stdout.write(line)
        if failed:
            raise CommandError("some polls failed (see above)")

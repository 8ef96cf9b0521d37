"""``manage.py prune_snapshots [--dry-run]``: thin old polled snapshots (see retention)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dashboard.sources import retention


class Command(BaseCommand):
    help = (
        "Thin snapshots stored by cluster-source polls: keep all of the last day, the "
        "earliest of each hour up to a week, then the earliest of each day; never a snapshot "
        "a run or quota change refers to, nor the newest of a source or partition."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="print what would be deleted; delete nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = bool(options["dry_run"])
        plan = retention.prune_snapshots(dry_run=dry_run)
        if dry_run:
            ids = " ".join(str(i) for i in plan.delete)
            self.stdout.write(
                f"would delete {len(plan.delete)} of {plan.considered} polled snapshots "
                f"({len(plan.protected)} protected)" + (f": {ids}" if ids else "")
            )
        else:
            self.stdout.write(
                f"deleted {plan.deleted} of {plan.considered} polled snapshots "
                f"({len(plan.protected)} protected)"
            )

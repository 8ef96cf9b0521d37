"""``manage.py recount_metrics [--check]``: the run history's tallies behind ``/metrics``.

PostgreSQL keeps them by triggers in every write's transaction (migration 0034), so
this is not part of any routine: ``--check`` compares them with counts of the whole
history (exit 1 and the differing rows when they differ); without it they are rebuilt
from the history, writers of runs and victims held off meanwhile.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard.metrics import counts


class Command(BaseCommand):
    help = "Check (--check) or rebuild the tallies /metrics reads (PostgreSQL)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--check", action="store_true", help="compare with the history; change nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not counts.tallied():
            self.stdout.write("no tallies on this database: /metrics counts the history")
            return
        if options["check"]:
            found = counts.differences()
            for line in found:
                self.stdout.write(line)
            if found:
                raise CommandError(f"{len(found)} tally rows differ from the history")
            self.stdout.write("the tallies agree with the history")
            return
        counts.recount()
        self.stdout.write("the tallies were rebuilt from the history")

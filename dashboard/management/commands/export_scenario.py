"""``manage.py export_scenario SNAPSHOT_ID``: print a snapshot as scenario JSON."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard import models, services


class Command(BaseCommand):
    help = "Print a stored snapshot as a scenario JSON that `python -m engine` accepts."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("snapshot_id", type=int)
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--ask", help="request: preempt for this pending ask")
        group.add_argument(
            "--quota", help='request: quota change, QUEUE=JSON (e.g. root.a={"vcore":8000})'
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            snapshot = models.ClusterSnapshot.objects.get(pk=options["snapshot_id"])
        except models.ClusterSnapshot.DoesNotExist:
            raise CommandError(f"no snapshot {options['snapshot_id']}") from None
        try:
            request = services.export_request(snapshot, ask=options["ask"], quota=options["quota"])
        except services.ServiceError as exc:
            raise CommandError(str(exc)) from exc
        doc = services.scenario_document(snapshot, request)
        self.stdout.write(json.dumps(doc, indent=2, sort_keys=True))

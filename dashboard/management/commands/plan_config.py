"""``manage.py plan_config FILE [--partition P]``: print the plan of a proposed config as JSON.

The same JSON as ``POST /api/plans/``; nothing is stored.  The partition selects
the config in force and the latest snapshot (there is no cluster model yet, so
there is no ``--cluster``).  A config the scheduler would refuse prints the plan
with its ``refusals`` and exits with status 1.
"""

from __future__ import annotations

import json
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard import plans_service, services
from dashboard.importers.config import DEFAULT_PARTITION


class Command(BaseCommand):
    help = (
        "Plan a proposed YuniKorn queue config against the partition's config in force and "
        "latest snapshot; print the plan as JSON (nothing is stored)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path, help="the proposed queues.yaml or ConfigMap")
        parser.add_argument(
            "--partition",
            default=DEFAULT_PARTITION,
            help="the partition whose config in force and snapshot the plan is made against",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            plan = plans_service.plan_proposed_config(
                data, partition=options["partition"], filename=path.name
            )
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(json.dumps(plan.to_dict(), indent=2))
        if plan.refusals:
            first = plan.refusals[0]
            where = f"{first.location}: " if first.location else ""
            raise CommandError(f"{path}: the scheduler would refuse it: {where}{first.reason}")

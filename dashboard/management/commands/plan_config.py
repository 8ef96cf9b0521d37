"""``manage.py plan_config FILE [--partition P] [--scenario N]``: print a proposed config's plan.

The same JSON as ``POST /api/plans/``; nothing is stored.  With ``--scenario N``
it prints instead the scenario of the N-th firing (the cluster as it stands then,
earlier firings' victims preempted, plus its ``quota_change`` request), which
``python -m engine`` answers with exactly that firing's planned preemption.  The partition selects
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

from dashboard import services
from dashboard.planning import firing_scenario


class Command(BaseCommand):
    help = (
        "Plan a proposed YuniKorn queue config against the partition's config in force and "
        "latest snapshot; print the plan as JSON (nothing is stored)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path, help="the proposed queues.yaml or ConfigMap")
        parser.add_argument(
            "--cluster",
            help="the partition's cluster (needed when several clusters have one so named)",
        )
        parser.add_argument(
            "--partition",
            default=services.DEFAULT_PARTITION,
            help="the partition whose config in force and snapshot the plan is made against",
        )
        parser.add_argument(
            "--scenario",
            type=int,
            metavar="N",
            help="print the engine scenario of the N-th firing instead of the plan",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            plan = services.plan_proposed_config(
                data,
                partition=options["partition"],
                cluster=options["cluster"],
                filename=path.name,
            )
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        order = options.get("scenario")
        if order is not None and not plan.refusals:
            firing = next((c for c in plan.firings if c.order == order), None)
            if firing is None or firing.answer is None:
                fired = ", ".join(f"{c.order} ({c.queue})" for c in plan.firings if c.answer)
                raise CommandError(
                    f"no firing {order} runs a quota preemption in this plan (those that do: "
                    f"{fired or 'none'})"
                )
            self.stdout.write(json.dumps(firing_scenario(plan, firing)))
            return
        self.stdout.write(json.dumps(plan.to_dict(), indent=2))
        if plan.refusals:
            first = plan.refusals[0]
            where = f"{first.location}: " if first.location else ""
            raise CommandError(f"{path}: the scheduler would refuse it: {where}{first.reason}")

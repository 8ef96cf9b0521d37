"""``manage.py import_config FILE [--cluster NAME] [--partition NAME]``: import a queues.yaml
or ConfigMap into a cluster (without ``--cluster``: the only cluster there is)."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard import services


class Command(BaseCommand):
    help = "Import a YuniKorn queue config (queues.yaml or its ConfigMap) as a new version."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--cluster",
            help="the cluster the config belongs to (made when new); "
            "default the only cluster there is",
        )
        parser.add_argument("--partition", help="import only this partition of the file")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            result = services.import_config(
                data,
                filename=path.name,
                partition=options["partition"],
                cluster=options["cluster"],
            )
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        for v in result.versions:
            self.stdout.write(
                f"config version {v.pk}: {v.partition.cluster.name}/{v.partition.name} v{v.number} "
                f"({v.queues.count()} queues, {len(v.warnings)} warnings)"
            )
            for w in v.warnings:
                self.stderr.write(f"warning: {w}")
        for c in result.changes:
            self.stdout.write(f"quota change {c.pk}: {c.queue_path} {c.state}: {c.reason}")

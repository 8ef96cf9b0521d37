"""``manage.py import_snapshot PATH``: import a cluster snapshot and print its id.

PATH is a scenario JSON, one YuniKorn REST file, a folder of REST files, or a
full state dump. Files are bounded by the poller's answer limit
(``SOURCES_MAX_ANSWER_BYTES``), not the web upload limit: the command reads what an
administrator saved from the scheduler, the same answers a poll reads.
"""

from __future__ import annotations

import gc
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard import services
from dashboard.sources.services import answer_limit


def read_snapshot_files(path: Path) -> dict[str, bytes]:
    """The file (or every ``*.json`` file of the folder) as name -> bytes."""
    if path.is_dir():
        files = {p.name: p.read_bytes() for p in sorted(path.glob("*.json")) if p.is_file()}
        if not files:
            raise CommandError(f"{path}: the folder holds no .json file")
        return files
    return {path.name: path.read_bytes()}


class Command(BaseCommand):
    help = "Import a snapshot (scenario JSON, YuniKorn REST file(s) or state dump); prints its id."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--partition", help="store under this partition name")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        # One import, then the process ends: the cyclic collector would only walk the
        # snapshot's millions of acyclic objects again and again (seconds on a big one).
        gc.disable()
        try:
            files = read_snapshot_files(path)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            snapshot = services.import_snapshot(
                files,
                partition=options["partition"],
                max_bytes=(answer_limit(), "SOURCES_MAX_ANSWER_BYTES"),
            )
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        for w in snapshot.warnings:
            self.stderr.write(f"warning: {w}")
        self.stdout.write(str(snapshot.pk))

"""``manage.py import_snapshot PATH [--cluster NAME] [--partition NAME] [--captured-at TIME]``:
import a cluster snapshot and print its id.

REST answers carry no capture time: ``--captured-at`` (ISO 8601 with its UTC offset) says
when they were fetched, else the import time is taken (and a warning says so).

The cluster defaults to the one the answers' ``clusterId`` names (made when new), else
the only cluster there is.

PATH is a scenario JSON, one YuniKorn REST file, a folder of REST files, or a
full state dump. Files are bounded by the poller's answer limit
(``SOURCES_MAX_ANSWER_BYTES``), not the web upload limit: the command reads what an
administrator saved from the scheduler, the same answers a poll reads.
"""

from __future__ import annotations

from argparse import ArgumentParser, ArgumentTypeError
from datetime import UTC, datetime
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


def aware_time(text: str) -> datetime:
    """An ISO 8601 time with its UTC offset (``2026-10-14T14:00:00Z``)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ArgumentTypeError(f"{text!r} is not an ISO 8601 time ({exc})") from exc
    if value.tzinfo is None:
        raise ArgumentTypeError(f"{text!r} has no UTC offset: add Z or +HH:MM")
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ArgumentTypeError(f"{text!r} is out of range") from None


class Command(BaseCommand):
    help = "Import a snapshot (scenario JSON, YuniKorn REST file(s) or state dump); prints its id."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--cluster",
            help="the cluster to store it in (made when new); default the answers' clusterId",
        )
        parser.add_argument("--partition", help="store under this partition name")
        parser.add_argument(
            "--captured-at",
            type=aware_time,
            help="when answers without a capture time (REST answers) were fetched, "
            "ISO 8601 with offset; default the import time",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["path"]
        try:
            files = read_snapshot_files(path)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        try:
            snapshot = services.import_snapshot(
                files,
                partition=options["partition"],
                cluster=options["cluster"],
                max_bytes=(answer_limit(), "SOURCES_MAX_ANSWER_BYTES"),
                captured_at=options["captured_at"],
            )
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        for w in snapshot.warnings:
            self.stderr.write(f"warning: {w}")
        if options["captured_at"] is None and snapshot.captured_at == snapshot.imported_at:
            self.stderr.write(
                "warning: the answers carry no capture time: the import time is taken as "
                "the time they were fetched (the snapshot's now for timers and runs); give "
                "--captured-at when importing older answers"
            )
        self.stdout.write(str(snapshot.pk))

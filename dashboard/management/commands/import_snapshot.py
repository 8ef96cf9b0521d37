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

Answers byte for byte equal to those the partition's newest snapshot was imported
from by this command (same files, same options) are not imported again: like a poll
of an unchanged cluster, the command stores nothing, says so, and prints that
snapshot's id.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from argparse import ArgumentParser, ArgumentTypeError
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from dashboard import services
from dashboard.services.snapshots.already_imported import answers_digest, snapshot_of_answers
from dashboard.sources.policy import answer_limit


def read_snapshot_files(path: Path) -> dict[str, bytes]:
    """The file (or every ``*.json`` file of the folder) as name -> bytes."""
    if path.is_dir():
        files = {p.name: p.read_bytes() for p in sorted(path.glob("*.json")) if p.is_file()}
        if not files:
            raise CommandError(f"{path}: the folder holds no .json file")
        return files
    return {path.name: path.read_bytes()}


class SnapshotFiles(Mapping[str, bytes]):
    """The snapshot's files as name -> bytes, each read from disk when asked for.

    A big cluster's answers are a hundred MiB: holding them all while the import
    builds and stores the snapshot would add that much to the peak memory, so each
    file is read when the importer takes it and dropped once decoded (its size is
    asked of the file system, not read). Each read stops one byte past *limit*, so a
    file that grew after its size check still cannot be read whole (it is refused as
    too large or as truncated JSON).
    """

    def __init__(self, path: Path, limit: int) -> None:
        if path.is_dir():
            paths = [p for p in sorted(path.glob("*.json")) if p.is_file()]
            if not paths:
                raise CommandError(f"{path}: the folder holds no .json file")
        else:
            paths = [path]
            path.stat()  # a missing file is an error here, not in the middle of the import
        self._paths = {p.name: p for p in paths}
        self._limit = limit

    def __getitem__(self, name: str) -> bytes:
        with self._paths[name].open("rb") as fh:
            # never more than the file holds now (a read allocates what it is asked for)
            return fh.read(min(self._limit, os.fstat(fh.fileno()).st_size) + 1)

    def sizes(self) -> dict[str, int]:
        """Each file's size on disk, without reading it (the size checks ask first)."""
        return {name: p.stat().st_size for name, p in self._paths.items()}

    def paths(self) -> list[Path]:
        """The files, in name order."""
        return [self._paths[name] for name in sorted(self._paths)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


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
    # an import starts often (a script following a cluster): the system checks would
    # add a third of a second to each run, and the command reads no project setting
    # they check
    requires_system_checks: list[str] = []
    #: Set on the command line's way in (:meth:`run_from_argv`), which ends the process
    #: at once: the parse is then kept, and the cyclic collector left off, to the end.
    _ends_at_once = False

    def run_from_argv(self, argv: list[str]) -> None:
        """The command line's way in (``manage.py import_snapshot``; ``call_command`` and
        the tests' in-process calls do not come here).

        Once the snapshot is stored, committed and its id printed, nothing is left to
        do: the process ends at once instead of having the interpreter tear down, one
        object at a time, the modules and caches a big import leaves behind (a
        noticeable part of a big poll's time; one-shot tools such as mypy end the
        same way). A refusal still leaves through Django's own handling, with its
        message and exit status.

        For the same reason the snapshot's parse (a hundred thousand allocations'
        objects) is not freed after the store, and the cyclic collector, paused for the
        import, is not resumed: resumed, it would walk every one of those objects once
        more.
        """
        self._ends_at_once = True
        super().run_from_argv(argv)  # closes the database connections on the way out
        self.stdout.flush()
        self.stderr.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(0)

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
        limit = answer_limit()
        # The cyclic collector would only walk the snapshot's millions of acyclic
        # objects again and again while it is stored (seconds on a big one).
        enabled = gc.isenabled()
        gc.disable()
        try:
            files = SnapshotFiles(path, limit)
            digest: str | None = None
            if all(size <= limit for size in files.sizes().values()):  # else refused below
                captured = options["captured_at"]
                digest = answers_digest(
                    files.paths(),
                    options["partition"],
                    options["cluster"],
                    None if captured is None else captured.isoformat(),
                )
            same = None if digest is None else snapshot_of_answers(digest)
            if same is not None:
                self.stderr.write(
                    f"unchanged: the answers are those snapshot {same.pk} was imported from;"
                    " nothing stored"
                )
                self.stdout.write(str(same.pk))
                return
            max_bytes = (limit, "SOURCES_MAX_ANSWER_BYTES")
            parsed = services.parse_answers(files, cluster=options["cluster"], max_bytes=max_bytes)
            if self._ends_at_once:
                self._parsed = parsed  # freed with the process (see run_from_argv)
            snapshot = services.import_snapshot(
                files,
                partition=options["partition"],
                cluster=options["cluster"],
                max_bytes=max_bytes,
                parsed=parsed,
                answers_digest=digest,
                captured_at=options["captured_at"],
            )
            del parsed
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}") from exc
        except services.ServiceError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        finally:
            if enabled and not self._ends_at_once:
                gc.enable()
        for w in snapshot.warnings:
            self.stderr.write(f"warning: {w}")
        if options["captured_at"] is None and snapshot.captured_at == snapshot.imported_at:
            self.stderr.write(
                "warning: the answers carry no capture time: the import time is taken as "
                "the time they were fetched (the snapshot's now for timers and runs); give "
                "--captured-at when importing older answers"
            )
        self.stdout.write(str(snapshot.pk))

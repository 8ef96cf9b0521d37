"""``manage.py load_demo``: a demo staff user (credentials printed) and the sample cluster.

Idempotent: the user is reused (its password reset to the printed one) and a
config or snapshot already stored with the same checksum is not imported again.
"""

from __future__ import annotations

import secrets
from argparse import ArgumentParser
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dashboard import models, services
from dashboard.importers import parse_config, parse_snapshot
from dashboard.importers.snapshot import SnapshotImport
from dashboard.management.commands.import_snapshot import read_snapshot_files

# The previous config first, then the live one: the import of the live one is
# the quota decrease of the fixtures' story (root.batch max vcore 14 -> 10).
CONFIGS = ("queues-nested-gpu-previous.yaml", "queues-nested-gpu.yaml")
STATE_DUMP = "fullstatedump.json"


class Command(BaseCommand):
    help = "Create the demo staff user (prints its credentials) and load the sample cluster."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--fixtures", type=Path, default=settings.DASHBOARD_FIXTURES_DIR)
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default=None, help="default: a fresh random one")

    def handle(self, *args: Any, **options: Any) -> None:
        fixtures: Path = options["fixtures"]
        if not (fixtures / "config").is_dir() or not (fixtures / "rest").is_dir():
            raise CommandError(f"{fixtures}: not the YuniKorn fixtures folder (config/, rest/)")
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=options["username"], defaults={"is_staff": True, "is_superuser": True}
        )
        password = options["password"] or secrets.token_urlsafe(12)
        user.set_password(password)
        user.is_staff = True
        user.is_superuser = True
        user.save()
        # the cluster is named after the REST answers' clusterId (as YuniKorn names it)
        files = {k: v for k, v in read_snapshot_files(fixtures / "rest").items() if k != STATE_DUMP}
        parsed = parse_snapshot(files)
        cluster = parsed.cluster_id or "default"
        # REST answers carry no capture time; the state dump of the same capture does (its
        # age is measured from it, not from the import)
        dump = fixtures / "rest" / STATE_DUMP
        captured_at = (
            services.as_datetime(parse_snapshot({STATE_DUMP: dump.read_bytes()}).captured_at)
            if dump.is_file() and parsed.captured_at is None
            else None
        )
        try:
            for name in CONFIGS:
                self._config(fixtures / "config" / name, user, cluster)
            self._snapshot(files, parsed, user, cluster, captured_at)
        except services.ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo staff user: username={user.get_username()} password={password}"
                + (" (created)" if created else " (password reset)")
            )
        )

    def _config(self, path: Path, user: Any, cluster: str) -> None:
        data = path.read_bytes()
        checksum = parse_config(data, filename=path.name).checksum
        if models.ConfigVersion.objects.filter(checksum=checksum, filename=path.name).exists():
            self.stdout.write(f"config {path.name}: already loaded")
            return
        result = services.import_config(data, filename=path.name, user=user, cluster=cluster)
        for v in result.versions:
            self.stdout.write(f"config {path.name}: {v.partition.name} v{v.number}")

    def _snapshot(
        self,
        files: dict[str, bytes],
        parsed: SnapshotImport,
        user: Any,
        cluster: str,
        captured_at: datetime | None,
    ) -> None:
        # the REST answers of the sample cluster (the state dump is the same cluster again)
        checksum = services.scenario_checksum(parsed.scenario, parsed.cluster)
        if models.ClusterSnapshot.objects.filter(checksum=checksum).exists():
            self.stdout.write("snapshot of the sample cluster: already loaded")
            return
        snapshot = services.import_snapshot(
            files, user=user, cluster=cluster, parsed=parsed, captured_at=captured_at
        )
        self.stdout.write(
            f"snapshot {snapshot.pk}: sample cluster {cluster} ({snapshot.partition.name})"
        )

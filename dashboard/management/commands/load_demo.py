"""``manage.py load_demo``: a demo staff user (credentials printed) and the sample cluster.

Idempotent: the user is reused (its password reset to the printed one) and a
config or snapshot already stored with the same checksum is not imported again.
"""

from __future__ import annotations

import secrets
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dashboard import models, services
from dashboard.importers import parse_config, parse_snapshot
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
        try:
            for name in CONFIGS:
                self._config(fixtures / "config" / name, user)
            self._snapshot(fixtures / "rest", user)
        except services.ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo staff user: username={user.get_username()} password={password}"
                + (" (created)" if created else " (password reset)")
            )
        )

    def _config(self, path: Path, user: Any) -> None:
        data = path.read_bytes()
        checksum = parse_config(data, filename=path.name).checksum
        if models.ConfigVersion.objects.filter(checksum=checksum, filename=path.name).exists():
            self.stdout.write(f"config {path.name}: already loaded")
            return
        result = services.import_config(data, filename=path.name, user=user)
        for v in result.versions:
            self.stdout.write(f"config {path.name}: {v.partition.name} v{v.number}")

    def _snapshot(self, folder: Path, user: Any) -> None:
        # the REST answers of the sample cluster (the state dump is the same cluster again)
        files = {k: v for k, v in read_snapshot_files(folder).items() if k != STATE_DUMP}
        parsed = parse_snapshot(files)
        checksum = services.scenario_checksum(parsed.scenario, parsed.cluster)
        if models.ClusterSnapshot.objects.filter(checksum=checksum).exists():
            self.stdout.write("snapshot of the sample cluster: already loaded")
            return
        snapshot = services.import_snapshot(files, user=user)
        self.stdout.write(f"snapshot {snapshot.pk}: sample cluster ({snapshot.partition.name})")

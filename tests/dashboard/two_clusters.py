"""Two clusters as an administrator sets them up with the commands: acme-ml (the shared
fixtures) and lab-west (data/cluster-b), both with partition ``default``."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.test import Client

from dashboard import models

LAB_WEST = Path(__file__).parent / "data" / "cluster-b"


def manage(command: str, *args: str) -> str:
    """A management command's output (its errors kept quiet)."""
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def logged_in(user: Any) -> Client:
    """A page client logged in as *user*."""
    client = Client()
    client.force_login(user)
    return client


def copy_rest(folder: Path, into: Path, *, config: bool) -> Path:
    """*folder*'s REST answers copied *into* a new folder, less the state dump (so that the
    answers and their events are read, not the dump) and, unless *config*, less
    config.json (the scheduler's config, which would become a config version)."""
    into.mkdir(parents=True)
    for p in folder.glob("*.json"):
        if "statedump" not in p.name and (config or p.name != "config.json"):
            (into / p.name).write_bytes(p.read_bytes())
    return into


def acme_folder(fixtures: Path, into: Path) -> Path:
    """The shared acme-ml fixtures *fixtures* as the two-cluster tests import them, in
    *into*: its REST folder less the state dump (so that the REST answers and their events
    are read, not the dump) and less config.json (the scheduler's config, which would
    become a config version beside queues-small.yaml), and its config folder."""
    copy_rest(fixtures / "rest", into / "rest", config=False)
    (into / "config").symlink_to(fixtures / "config")
    return into


def import_two(acme_config: Path, acme_rest: Path) -> dict[str, models.Partition]:
    """acme-ml's *acme_config* and *acme_rest* and lab-west's config and REST folder,
    imported with the commands; the partitions by cluster name."""
    manage("import_config", str(acme_config), "--cluster", "acme-ml")
    manage("import_config", str(LAB_WEST / "config" / "queues.yaml"), "--cluster", "lab-west")
    manage("import_snapshot", str(acme_rest), "--cluster", "acme-ml")
    manage("import_snapshot", str(LAB_WEST / "rest"))  # the answers' clusterId: lab-west
    return {p.cluster.name: p for p in models.Partition.objects.select_related("cluster")}

"""The scheduler's own config (``/ws/v1/config``) as the partition's config in force.

A REST folder holding ``config.json`` (or a state dump's ``config``) and every poll
of a live source carry the config the scheduler runs.  When it differs from the
partition's version in force it is stored as the next version, exactly as an
imported queues.yaml is (:func:`dashboard.services.configs.versions.store_config_import`):
maxes the cluster changed become quota changes timed by the scheduler's clock, and
changes planned in the dashboard that the config shows become applied.  The same
config again stores nothing: same checksum as the version in force, or no
difference in what the dashboard reads (queues, limits, properties, delays, the
partition's flags).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from dashboard import models
from dashboard.importers.config import ConfigImport
from dashboard.importers.config.answer import config_from_json
from dashboard.importers.errors import ImportFailure
from dashboard.plumbing.errors import ImportRejected
from dashboard.services.configs.versions import (
    ConfigImportResult,
    config_matches,
    store_config_import,
)
from dashboard.services.scope.latest import latest_config

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike


def config_in_force_matches(partition: models.Partition, parsed: ConfigImport) -> bool:
    """Whether *parsed* (one partition, named as *partition*) is the version in force."""
    latest = latest_config(partition)
    return latest is not None and config_matches(latest, parsed, parsed.partitions[0])


def for_partition(parsed: ConfigImport, scheduler_partition: str, name: str) -> ConfigImport:
    """*parsed* reduced to the scheduler's partition, named *name* (where it is stored).

    Raises:
        ImportRejected: when the config has no such partition.
    """
    found = [p for p in parsed.partitions if p.name == scheduler_partition.lower()]
    if not found:
        names = ", ".join(p.name for p in parsed.partitions)
        raise ImportRejected(
            "partition",
            f"{parsed.filename} has no partition {scheduler_partition!r} ({names})",
        )
    return replace(parsed, partitions=(replace(found[0], name=name),))


def store_scheduler_config(
    partition: models.Partition,
    parsed: ConfigImport,
    *,
    scheduler_partition: str,
    now: datetime,
    alert_warnings: bool = True,
    user: UserLike = None,
) -> ConfigImportResult | None:
    """Store the scheduler's config of *partition* unless it is the version in force.

    *user* is who imported it (the upload's user; None for a poll).

    Returns the stored version (and the quota changes learned), or None when unchanged.
    Must run inside the caller's transaction (the snapshot's, the poll's). A source
    passes *alert_warnings* False: it raises them once until they change.
    """
    mine = for_partition(parsed, scheduler_partition, partition.name)
    if config_in_force_matches(partition, mine):
        return None
    return store_config_import(
        mine,
        filename=parsed.filename,
        partition=partition.name,
        cluster=partition.cluster.name,
        now=now,
        alert_warnings=alert_warnings,
        user=user,
    )


def store_answer_config(
    partition: models.Partition,
    answer: tuple[str, str, Any],
    *,
    scheduler_partition: str,
    now: datetime,
    alert_warnings: bool = True,
    user: UserLike = None,
) -> ConfigImportResult | None:
    """A REST folder's ``config.json`` (file, key path, decoded JSON) as
    :func:`store_scheduler_config` stores it.

    Raises:
        ImportRejected: naming the file and key when the config is refused.
    """
    filename, base, doc = answer
    try:
        parsed = config_from_json(doc, filename=filename, base=base)
    except ImportFailure as exc:
        raise ImportRejected(exc.location or filename, exc.message) from exc
    return store_scheduler_config(
        partition,
        parsed,
        scheduler_partition=scheduler_partition,
        now=now,
        alert_warnings=alert_warnings,
        user=user,
    )

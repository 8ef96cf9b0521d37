"""Each poll also reads the scheduler's config in force (``GET /ws/v1/config``).

The answer is read through the source's client (token, address policy, no
redirects, size cap, retries) and by the same importer as an uploaded
``config.json`` (:mod:`dashboard.importers.config.answer`).  When its checksum is
the one the source saw last, nothing is done but noting when it was seen; when it
changed, it is stored as the partition's next config version unless it is the
version in force already (:mod:`dashboard.services.configs.from_scheduler`): maxes the
cluster changed become quota changes on the scheduler's clock, and changes planned
in the dashboard that it shows become applied.  Stored in the poll's transaction,
after the snapshot and the events, so the learned changes find the snapshot's
running timers and the QUEUE_MAX events.

A failure (the endpoint, an answer the importer refuses, a config without the
source's partition) is a note on the source (``last_config_error``), never a
failed poll: the snapshot and the events are stored as without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from dashboard.importers.config import ConfigImport
from dashboard.importers.config.answer import parse_config_answer
from dashboard.importers.errors import ImportFailure
from dashboard.models import ConfigVersion
from dashboard.plumbing.errors import ServiceError
from dashboard.services.configs.from_scheduler import store_scheduler_config
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError, fetch_config
from dashboard.sources.faults import note_warnings
from dashboard.sources.models import ClusterSource
from dashboard.sources.partitions import source_partition
from dashboard.sources.policy import fetch_policy
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken

logger = logging.getLogger(__name__)

ConfigFetcher = Callable[[ClusterSource], bytes]
"""Reads one ``/ws/v1/config`` answer of a source."""


@dataclass(frozen=True)
class ConfigRead:
    """What one poll read of the scheduler's config: the parsed config, or why none."""

    config: ConfigImport | None
    note: str = ""


def default_config_fetcher(sleep: Callable[[float], None] = time.sleep) -> ConfigFetcher:
    """Read the scheduler's config over HTTP with the configured policy."""

    def fetch(source: ClusterSource) -> bytes:
        if isinstance(source.token, UndecryptableToken):
            raise FetchError("token", UNDECRYPTABLE_MESSAGE)
        return fetch_config(
            source.base_url,
            token=source.token,
            verify_tls=source.verify_tls,
            policy=fetch_policy(),
            sleep=sleep,
            addresses=policy_from_settings(),
        )

    return fetch


def read_config(source: ClusterSource, fetch: ConfigFetcher) -> ConfigRead:
    """Fetch and parse the scheduler's config; a failure is a note, never an exception."""
    try:
        parsed = parse_config_answer(fetch(source), filename="config.json")
    except FetchError as exc:
        return ConfigRead(None, f"config fetch {exc}")
    except ImportFailure as exc:
        # the importer's message quotes the answer (the target's content): logged only
        logger.warning("cluster source %s: config refused by the importer: %s", source.name, exc)
        return ConfigRead(
            None,
            "config refused: /ws/v1/config is not a config the dashboard can read "
            "(the importer's message is in the worker log)",
        )
    return ConfigRead(parsed)


def store_polled_config(source: ClusterSource, read: ConfigRead | None, now: datetime) -> None:
    """Keep what *read* found on the (locked) source; store a changed config as a version.

    Runs in the poll's transaction; a refusal rolls back only its own savepoint.
    """
    if read is None:
        return
    fields = ["last_config_error"]
    source.last_config_error = read.note[:4000]
    config = read.config
    partition = source_partition(source)
    if config is not None and partition is not None:
        known = source.config_checksum == config.checksum and partition.configs.exists()
        try:
            if not known:
                with transaction.atomic():
                    stored = store_scheduler_config(
                        partition,
                        config,
                        scheduler_partition=source.partition,
                        now=now,
                        alert_warnings=False,
                    )
                if stored is not None:
                    # raised once per source until they change, not once per version
                    note_warnings(source, "config", list(config.warnings), now)
            source.config_checksum = config.checksum[:64]
            source.config_seen_at = now
            # a kept plan the scheduler now runs, byte for byte: applied
            ConfigVersion.objects.filter(
                partition=partition, planned=True, checksum=config.checksum, applied_at=None
            ).update(applied_at=now)
            fields += ["config_checksum", "config_seen_at"]
        except ServiceError as exc:
            logger.warning("cluster source %s: config not stored: %s", source.name, exc)
            source.last_config_error = (
                f"config not stored: the scheduler's config has no partition {source.partition!r}"
                if exc.field == "partition"
                else "config not stored: the import refused it (the message is in the worker log)"
            )[:4000]
    source.save(update_fields=fields)

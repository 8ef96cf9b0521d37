"""The scheduler's own health and identity, read with every poll of a source.

- ``GET /ws/v1/scheduler/healthcheck`` answers ``dao.SchedulerHealthDAOInfo``
  (``pkg/webservice/dao/scheduler_health.go``): ``Healthy`` and ``HealthChecks``, each
  with ``Name``, ``Succeeded``, ``Description`` and ``DiagnosisMessage`` (Go field
  names; the strings are ``omitempty``).
- ``GET /ws/v1/clusters`` answers a list of ``dao.ClusterDAOInfo``
  (``cluster_info.go``): ``startTime`` (nanoseconds), ``rmBuildInformation`` (one
  map of strings per resource manager: ``buildVersion``, ``buildDate``,
  ``isPluginVersion``, ``rmId``, ...), ``partition`` and ``clusterName``.

The ``startTime`` goes to restart detection (:mod:`dashboard.sources.restartpoll`).
A failing check becomes one alert (raised when the scheduler turns unhealthy,
acknowledged by the dashboard itself when it is healthy again, with a note); an
answer that cannot be read leaves the health unknown and is shown, never failing
the poll: the snapshot is what the poll is for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError, FetchPolicy, fetch_answer
from dashboard.sources.models import ClusterSource
from dashboard.sources.restartpoll import note_served_start
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken

logger = logging.getLogger(__name__)

HEALTHCHECK = "/ws/v1/scheduler/healthcheck"
CLUSTERS = "/ws/v1/clusters"
#: Longest text kept of one check's description or diagnosis.
TEXT_LIMIT = 2000

#: (source, path) -> the answer's bytes; raises FetchError.
PathFetcher = Callable[[ClusterSource, str], bytes]


@dataclass(frozen=True)
class HealthCheck:
    name: str
    succeeded: bool
    description: str = ""
    diagnosis: str = ""


@dataclass(frozen=True)
class SchedulerHealth:
    """What one poll learned of the scheduler itself (``error`` when it could not)."""

    healthy: bool | None
    checks: tuple[HealthCheck, ...] = ()
    start_time: datetime | None = None
    build: dict[str, str] = field(default_factory=dict)
    error: str = ""

    @property
    def failed(self) -> tuple[HealthCheck, ...]:
        return tuple(c for c in self.checks if not c.succeeded)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["start_time"] = self.start_time.isoformat() if self.start_time else None
        return out


def _text(v: object, where: str) -> str:
    if v is None:
        return ""
    if not isinstance(v, str):
        raise ImportFailure(f"must be a string, not {type(v).__name__}", where)
    return v[:TEXT_LIMIT]


def _flag(v: object, where: str) -> bool:
    if v is None:  # not omitempty in Go, but an older build may leave it out
        return False
    if not isinstance(v, bool):
        raise ImportFailure(f"must be true or false, not {type(v).__name__}", where)
    return v


def parse_health(data: bytes) -> tuple[bool, tuple[HealthCheck, ...]]:
    """``Healthy`` and the checks of a healthcheck answer.

    Raises:
        ImportFailure: naming the field of a malformed answer.
    """
    doc = load_json("healthcheck", data)
    if not isinstance(doc, Mapping) or "Healthy" not in doc:
        raise ImportFailure("not a scheduler healthcheck answer: no Healthy", "healthcheck")
    healthy = _flag(doc["Healthy"], "healthcheck: Healthy")
    raw = doc.get("HealthChecks") or []
    if not isinstance(raw, list):
        raise ImportFailure("must be a list", "healthcheck: HealthChecks")
    checks = []
    for i, c in enumerate(raw):
        where = f"healthcheck: HealthChecks[{i}]"
        if not isinstance(c, Mapping):
            raise ImportFailure("must be an object", where)
        checks.append(
            HealthCheck(
                name=_text(c.get("Name"), f"{where}.Name") or f"check {i + 1}",
                succeeded=_flag(c.get("Succeeded"), f"{where}.Succeeded"),
                description=_text(c.get("Description"), f"{where}.Description"),
                diagnosis=_text(c.get("DiagnosisMessage"), f"{where}.DiagnosisMessage"),
            )
        )
    return healthy, tuple(checks)


def parse_clusters(data: bytes) -> tuple[datetime | None, dict[str, str]]:
    """The scheduler's start time and the first resource manager's build information.

    Raises:
        ImportFailure: naming the field of a malformed answer.
    """
    doc = load_json("clusters", data)
    if not isinstance(doc, list):
        raise ImportFailure("not a clusters answer: expected a list", "clusters")
    start: datetime | None = None
    build: dict[str, str] = {}
    for i, c in enumerate(doc):
        where = f"clusters: [{i}]"
        if not isinstance(c, Mapping):
            raise ImportFailure("must be an object", where)
        ns = c.get("startTime")
        if ns is not None:
            if isinstance(ns, bool) or not isinstance(ns, int) or not 0 <= ns < 2**63:
                raise ImportFailure("must be nanoseconds since the epoch", f"{where}.startTime")
            if ns and start is None:
                start = datetime.fromtimestamp(ns / 1e9, UTC)
        infos = c.get("rmBuildInformation") or []
        if not isinstance(infos, list):
            raise ImportFailure("must be a list", f"{where}.rmBuildInformation")
        for j, info in enumerate(infos):
            if not isinstance(info, Mapping):
                raise ImportFailure("must be an object", f"{where}.rmBuildInformation[{j}]")
            if not build:
                build = {
                    str(k): _text(v, f"{where}.rmBuildInformation[{j}].{k}")
                    for k, v in sorted(info.items())
                }
    return start, build


def read_health(source: ClusterSource, fetch: PathFetcher) -> SchedulerHealth:
    """Read both answers; any failure is kept as the health's ``error`` (never raised)."""
    try:
        healthy, checks = parse_health(fetch(source, HEALTHCHECK))
    except (FetchError, ImportFailure) as exc:
        return SchedulerHealth(healthy=None, error=f"{HEALTHCHECK}: {exc}")
    try:
        start, build = parse_clusters(fetch(source, CLUSTERS))
    except (FetchError, ImportFailure) as exc:
        logger.info("cluster source %s: %s not read: %s", source.name, CLUSTERS, exc)
        start, build = None, {}
    return SchedulerHealth(healthy=healthy, checks=checks, start_time=start, build=build)


def default_path_fetcher(policy: FetchPolicy) -> PathFetcher:
    """GET one path of the source's scheduler with *policy*, its token and address checks."""

    def fetch(source: ClusterSource, path: str) -> bytes:
        if isinstance(source.token, UndecryptableToken):
            raise FetchError("token", UNDECRYPTABLE_MESSAGE)
        return fetch_answer(
            source.base_url,
            path,
            token=source.token,
            verify_tls=source.verify_tls,
            policy=policy,
            addresses=policy_from_settings(),
        )

    return fetch


def _failing_text(health: SchedulerHealth) -> str:
    parts = [f"{c.name}" + (f": {c.diagnosis}" if c.diagnosis else "") for c in health.failed]
    return "; ".join(parts) or "Healthy is false"


def record_health(
    source: ClusterSource, health: SchedulerHealth, *, now: datetime | None = None
) -> None:
    """Store what was read on the source; alert when the scheduler turns unhealthy.

    The alert is raised once: while it stays unhealthy, later polls update the
    stored checks only. When it is healthy again, the open alert is acknowledged by
    the dashboard and an info entry says so.
    """
    now = now or platform.utcnow()
    was_unhealthy = source.scheduler_unhealthy_since is not None
    source.scheduler_health = {**health.to_dict(), "checked_at": now.isoformat()}
    fields = ["scheduler_health", "scheduler_unhealthy_since"]
    partition = dm.Partition.objects.filter(
        cluster_id=source.cluster_id, name=source.partition
    ).first()
    if health.healthy is False and not was_unhealthy:
        source.scheduler_unhealthy_since = now
        platform.raise_alert(
            dm.Alert.Kind.SCHEDULER_UNHEALTHY,
            f"the scheduler of cluster source {source.name} reports itself unhealthy: "
            f"{_failing_text(health)}",
            level=dm.Alert.Level.ERROR,
            partition=partition,
            now=now,
        )
    elif health.healthy is True and was_unhealthy:
        since = source.scheduler_unhealthy_since
        source.scheduler_unhealthy_since = None
        dm.Alert.objects.filter(
            kind=dm.Alert.Kind.SCHEDULER_UNHEALTHY,
            partition=partition,
            acknowledged_at__isnull=True,
            message__contains=f"cluster source {source.name} ",
        ).update(acknowledged_at=now)
        platform.raise_alert(
            dm.Alert.Kind.SCHEDULER_HEALTHY,
            f"the scheduler of cluster source {source.name} is healthy again "
            f"(unhealthy since {since:%Y-%m-%d %H:%M:%S} UTC)"
            if since
            else "",
            level=dm.Alert.Level.INFO,
            partition=partition,
            now=now,
        )
    source.save(update_fields=fields)


def check_health(source_id: int, fetch: PathFetcher, *, now: datetime | None = None) -> None:
    """Read and record the health of one source's scheduler (never raises for its answers);
    its ``startTime`` goes to restart detection (:mod:`dashboard.sources.restartpoll`)."""
    source = ClusterSource.objects.get(pk=source_id)
    health = read_health(source, fetch)
    record_health(source, health, now=now)
    note_served_start(source, health.start_time, now=now or platform.utcnow())

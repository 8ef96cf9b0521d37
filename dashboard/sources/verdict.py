"""The scheduler's own verdict on a proposed config, asked of a partition's live source.

``POST /ws/v1/validate-conf`` with the queues.yaml text runs the scheduler's own
``LoadSchedulerConfigFromByteArray`` and answers ``dao.ValidateConfResponse``:
``{"allowed": bool, "reason": "..."}``.  The dashboard's validation of the same
text stays (an upload without a source has nothing else); the plan shows both and
says when they disagree.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError, FetchPolicy, validate_conf
from dashboard.sources.models import ClusterSource
from dashboard.sources.policy import fetch_policy
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken

#: Longest reason kept from the scheduler's answer.
REASON_LIMIT = 4000


@dataclass(frozen=True)
class Verdict:
    """``allowed`` None when the scheduler could not be asked (``error`` says why)."""

    source: str
    allowed: bool | None
    reason: str = ""
    error: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _source(cluster: str | None, partition: str) -> ClusterSource | None:
    sources = ClusterSource.objects.filter(partition=partition, enabled=True)
    if cluster is not None:
        sources = sources.filter(cluster__name=cluster)
    found = list(sources.select_related("cluster")[:2])
    return found[0] if len(found) == 1 else None


def _read(body: bytes) -> tuple[bool, str]:
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise FetchError("/ws/v1/validate-conf", f"not JSON: {exc}") from None
    allowed = doc.get("allowed") if isinstance(doc, dict) else None
    reason = doc.get("reason", "") if isinstance(doc, dict) else None
    if not isinstance(allowed, bool) or not isinstance(reason, str):
        raise FetchError("/ws/v1/validate-conf", 'expected {"allowed": bool, "reason": text}')
    return allowed, reason[:REASON_LIMIT]


def scheduler_verdict(
    queues_yaml: str, *, partition: str, cluster: str | None, policy: FetchPolicy
) -> Verdict | None:
    """Ask the partition's live source what its scheduler says of *queues_yaml*.

    None when the partition has no enabled source (or its cluster is ambiguous); a
    verdict with ``error`` when the scheduler could not be asked or answered oddly.
    """
    source = _source(cluster, partition)
    if source is None:
        return None
    if isinstance(source.token, UndecryptableToken):
        return Verdict(source.name, None, error=UNDECRYPTABLE_MESSAGE)
    try:
        body = validate_conf(
            source.base_url,
            queues_yaml.encode("utf-8", errors="surrogatepass"),
            token=source.token,
            verify_tls=source.verify_tls,
            policy=policy,
            addresses=policy_from_settings(),
        )
        allowed, reason = _read(body)
    except FetchError as exc:
        return Verdict(source.name, None, error=str(exc))
    return Verdict(source.name, allowed, reason)


def plan_verdict(
    queues_yaml: str, refused: bool, *, partition: str, cluster: str | None
) -> dict[str, object] | None:
    """The verdict for a plan's page or answer, with whether it disagrees with the
    dashboard's own (*refused*: the dashboard refuses the config)."""
    verdict = scheduler_verdict(
        queues_yaml, partition=partition, cluster=cluster, policy=fetch_policy()
    )
    if verdict is None:
        return None
    return {
        **verdict.to_dict(),
        "disagrees": verdict.allowed is not None and verdict.allowed == refused,
    }

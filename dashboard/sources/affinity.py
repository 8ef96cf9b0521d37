"""Source affinity: each source's polls go to one live poller, so its memo always hits.

A poll parses only what changed since the source's last poll *in the same process*
(the memo of :mod:`dashboard.sources.poll`); polls of one source landing on any
process of a pool find the memo of their last poll only as often as they land on the
same process. So:

- a **poller** is a Celery worker consuming the poll queue (``SOURCES_POLL_QUEUE``,
  else the default queue). At start it also consumes a queue of its own
  (``<poll queue>.<its hostname>``), and while it runs it notes itself alive in the database
  (:class:`~dashboard.sources.models.SourcePoller`, every few seconds from its
  consumer's heartbeat; removed when it shuts down). Run pollers with one process each
  (``--concurrency 1``) and the prefork pool (the solo pool sends no heartbeat while
  a poll runs): the memo is per process. The worker's side is in
  :mod:`dashboard.sources.pollers`.
- the **beat's tick** (``dashboard.poll_cluster_sources``) sends each due source's poll
  to the queue of one live poller, chosen by rendezvous hashing over the live pollers
  (:func:`owner`): a source keeps its poller while that one lives, and when a poller
  joins or leaves only the sources it gains or loses move.
- **takeover**: a poller not seen for ``SOURCES_POLLER_TTL_SECONDS`` is dead. At the next
  tick its sources - a poll message waiting in its queue, or a poll it holds the lease
  of - are released (:func:`release_orphans`: due now, lease dropped) and sent to their
  new owners, so a dead poller's sources are polled again within the TTL and a tick. A
  poller that was only late finds its lease gone and stores nothing (the lease is the
  claim's token, :mod:`dashboard.sources.poll`).

With no live poller (``SOURCES_POLL_AFFINITY`` off, or pollers not started yet) the
polls go to the poll queue as before, and any worker consuming it takes them.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from dashboard.sources.models import ClusterSource, SourcePoller

logger = logging.getLogger(__name__)

#: Rows of pollers not seen for this long are deleted (a restarted pod has a new name).
FORGET_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class Poller:
    name: str
    queue: str


def enabled() -> bool:
    return bool(getattr(settings, "SOURCES_POLL_AFFINITY", True))


def ttl() -> timedelta:
    return timedelta(seconds=float(getattr(settings, "SOURCES_POLLER_TTL_SECONDS", 20.0)))


# -- the pollers' side ---------------------------------------------------------------


def note_alive(hostname: str, queue: str, now: datetime) -> None:
    """Note the poller *hostname*, consuming its own *queue*, alive now (its consumer's
    heartbeat; :mod:`dashboard.sources.pollers`)."""
    SourcePoller.objects.update_or_create(name=hostname, defaults={"queue": queue, "seen_at": now})


def note_gone(hostname: str) -> None:
    """The poller *hostname* shuts down: its sources go to the others at the next tick."""
    SourcePoller.objects.filter(name=hostname).delete()


# -- the beat's side -----------------------------------------------------------------


def live_pollers(now: datetime) -> list[Poller]:
    """The pollers seen within the TTL (none when affinity is off); forgets old rows."""
    if not enabled():
        return []
    SourcePoller.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()
    return [
        Poller(name, queue)
        for name, queue in SourcePoller.objects.filter(seen_at__gte=now - ttl())
        .order_by("name")
        .values_list("name", "queue")
    ]


def _weight(poller: str, source_id: int) -> bytes:
    return hashlib.blake2b(f"{poller}\0{source_id}".encode(), digest_size=8).digest()


def owner(source_id: int, pollers: list[Poller]) -> Poller | None:
    """The poller whose queue the source's polls go to (rendezvous hashing), or None."""
    if not pollers:
        return None
    return max(pollers, key=lambda p: _weight(p.name, source_id))


def release_orphans(pollers: list[Poller], now: datetime) -> int:
    """Make the sources last sent to a poller that is not live due now, their lease
    dropped, so that this tick sends them to a live one; returns how many.

    Also releases a source whose poll finished on the dead poller (one poll earlier
    than its interval, once): the source row does not say which.
    """
    live = [p.name for p in pollers]
    released = (
        ClusterSource.objects.exclude(sent_to="")
        .exclude(sent_to__in=live)
        .filter(enabled=True)
        .update(sent_to="", lease_until=None, next_poll_at=now)
    )
    if released:
        logger.warning(
            "%d cluster source(s) of pollers not seen for %s s sent to the live ones",
            released,
            ttl().total_seconds(),
        )
    return released

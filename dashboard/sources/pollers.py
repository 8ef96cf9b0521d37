"""The worker's side of source affinity (:mod:`dashboard.sources.affinity`).

A worker consuming the poll queue (``SOURCES_POLL_QUEUE``, else Celery's default) also
consumes a queue of its own, ``<poll queue>.<its hostname>``, and notes itself alive in
the database on its consumer's heartbeats (at most every ``NOTE_SECONDS``); it is
forgotten when it shuts down, once its running polls have finished. The beat sends each
source's polls to one live poller's queue.

Connected to Celery's signals when the sources app is ready (``apps.py``), in every
process; only a worker's main process receives them.
"""

from __future__ import annotations

import logging
import time

from celery.signals import celeryd_after_setup, heartbeat_sent, worker_ready, worker_shutdown
from django.conf import settings
from django.db import close_old_connections

from dashboard.plumbing.clock import utcnow
from dashboard.sources import affinity

logger = logging.getLogger(__name__)

#: At most this often a poller notes itself alive (Celery's heartbeat is every 2 s; the
#: beat's TTL, ``SOURCES_POLLER_TTL_SECONDS``, is 20 s by default).
NOTE_SECONDS = 4.0

#: This worker as a poller: its hostname and its own queue (None: not a poller).
_poller: tuple[str, str] | None = None
#: When it last noted itself alive (monotonic seconds).
_noted = -1e9


@celeryd_after_setup.connect
def _own_queue(sender: str, instance: object, **_: object) -> None:
    global _poller
    if not affinity.enabled():
        return
    queues = instance.app.amqp.queues  # type: ignore[attr-defined]
    poll_queue = str(getattr(settings, "SOURCES_POLL_QUEUE", "") or "celery")
    if poll_queue not in queues.consume_from:
        return
    own = f"{poll_queue}.{sender}"
    queues.select_add(own)
    _poller = (sender, own)
    logger.info("poller %s: its sources' polls come on queue %s", sender, own)


def _note(*, force: bool = False) -> None:
    global _noted
    if _poller is None or (not force and time.monotonic() - _noted < NOTE_SECONDS):
        return
    try:
        close_old_connections()
        affinity.note_alive(*_poller, utcnow())
        _noted = time.monotonic()
    except Exception:  # a database hiccup must not stop the worker; the TTL tells
        logger.exception("cannot note this poller alive")


@worker_ready.connect
def _ready(**_: object) -> None:
    _note(force=True)


@heartbeat_sent.connect
def _alive(**_: object) -> None:
    _note()


@worker_shutdown.connect
def _gone(**_: object) -> None:
    """A poller shut down is forgotten at once: its sources go to the others at the next
    tick."""
    if _poller is None:
        return
    try:
        close_old_connections()
        affinity.note_gone(_poller[0])
    except Exception:
        logger.exception("cannot note this poller gone")

"""Warm a web process's engine state and answer pieces for a snapshot in the background.

A what-if answer explains its victims with the snapshot's engine state, built
once per snapshot and process (seconds at 100,000 allocations), and draws the
snapshot's tree and the victims' nodes (read once per snapshot and process).
The workers warm their engine state when a snapshot is stored; a web process
warms its own state and answer pieces when the what-if page is shown, so that
they are ready by the time the form is sent.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection

from dashboard import models, services
from dashboard.pages.views import runs

log = logging.getLogger(__name__)

_warming: set[tuple[int, str]] = set()
_lock = threading.Lock()
#: Snapshots whose what-if page had the workers warm them, in this process (newest last).
_workers_asked: dict[int, None] = {}
_WORKERS_ASKED_KEPT = 256


def warm_workers(snapshot: models.ClusterSnapshot) -> bool:
    """Have the workers build *snapshot*'s engine state, once per snapshot and web process,
    when its what-if page is shown: a snapshot stored by a poll of a source polled often
    is not warmed when stored (``SOURCES_WARM_UP_MIN_INTERVAL``), and the form takes long
    enough to fill for the workers to build it. A worker that has it does nothing.
    """
    with _lock:
        if snapshot.pk in _workers_asked:
            return False
        _workers_asked[snapshot.pk] = None
        while len(_workers_asked) > _WORKERS_ASKED_KEPT:
            del _workers_asked[next(iter(_workers_asked))]
    services.warm_up_workers(snapshot.pk)
    return True


def warm_in_background(snapshot: models.ClusterSnapshot) -> bool:
    """Start building *snapshot*'s engine state and answer pieces in a thread of this process.

    Nothing when ``DASHBOARD_WARM_WEB`` is off, when both are built already or
    being built. True when a thread was started.
    """
    if not getattr(settings, "DASHBOARD_WARM_WEB", True):
        return False
    has_state = services.is_engine_state_cached(snapshot)
    if has_state and runs.answer_pieces_cached(snapshot):
        return False
    key = (snapshot.pk, snapshot.checksum)
    with _lock:
        if key in _warming:
            return False
        _warming.add(key)

    def run() -> None:
        try:
            # the answer pieces first: they take a fraction of a second, the state seconds
            runs.warm_answer_pieces(snapshot)
            if not has_state:
                services.warm_engine_state(snapshot.pk)
        except Exception:  # a warm-up never fails a page: the first ask builds the state
            log.exception("warming the engine state of snapshot %s failed", snapshot.pk)
        finally:
            connection.close()  # this thread's own connection
            with _lock:
                _warming.discard(key)

    threading.Thread(target=run, name=f"warm-snapshot-{snapshot.pk}", daemon=True).start()
    return True

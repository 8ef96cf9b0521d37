"""Warm a web process's engine state for a snapshot in the background.

A what-if answer explains its victims with the snapshot's engine state, built
once per snapshot and process (seconds at 100,000 allocations).  The workers
warm theirs when a snapshot is stored; a web process warms its own when the
what-if page is shown, so that the state is ready by the time the form is sent.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import connection

from dashboard import models, services

log = logging.getLogger(__name__)

_warming: set[tuple[int, str]] = set()
_lock = threading.Lock()


def warm_in_background(snapshot: models.ClusterSnapshot) -> bool:
    """Start building *snapshot*'s engine state in a thread of this process.

    Nothing when ``DASHBOARD_WARM_WEB`` is off, when the state is built already
    or being built. True when a thread was started.
    """
    if not getattr(settings, "DASHBOARD_WARM_WEB", True):
        return False
    if services.is_engine_state_cached(snapshot):
        return False
    key = (snapshot.pk, snapshot.checksum)
    with _lock:
        if key in _warming:
            return False
        _warming.add(key)

    def run() -> None:
        try:
            services.warm_engine_state(snapshot.pk)
        except Exception:  # a warm-up never fails a page: the first ask builds the state
            log.exception("warming the engine state of snapshot %s failed", snapshot.pk)
        finally:
            connection.close()  # this thread's own connection
            with _lock:
                _warming.discard(key)

    threading.Thread(target=run, name=f"warm-snapshot-{snapshot.pk}", daemon=True).start()
    return True

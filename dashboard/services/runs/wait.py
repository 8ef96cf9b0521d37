"""Waiting for a run to finish: the long poll behind the pages' "answer is in" signal.

A what-if is evaluated by a worker; the page that asked for it waits here (one
short indexed read of the run's status every few tens of milliseconds) instead
of reloading itself every two seconds, and learns the answer is in as soon as the
worker stores it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from dashboard import models

#: Status values of a run still being evaluated.
ACTIVE = (models.PreemptionRun.Status.PENDING, models.PreemptionRun.Status.RUNNING)
#: Seconds between reads of the status: often at first (an answer on a warm worker
#: takes tens of milliseconds), then less often for a long run.
FIRST_INTERVAL = 0.03
LATER_INTERVAL = 0.25
#: After this many seconds of waiting, the reads slow down to LATER_INTERVAL.
FAST_SECONDS = 2.0


def wait_for_run(
    run_id: int,
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """The run's status once it is no longer pending or running, or after *timeout* s.

    Returns the status it has then (still ``pending`` or ``running`` on a timeout),
    or None when there is no such run.
    """
    started = clock()
    deadline = started + max(0.0, timeout)
    while True:
        status = (
            models.PreemptionRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        )
        if status is None or status not in ACTIVE:
            return status
        now = clock()
        if now >= deadline:
            return str(status)
        interval = FIRST_INTERVAL if now - started < FAST_SECONDS else LATER_INTERVAL
        sleep(min(interval, deadline - now))

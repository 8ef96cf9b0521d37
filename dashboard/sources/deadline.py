"""The overall deadline of one poll, over all its requests, retries and reads.

A request's timeout bounds each wait for bytes, not the whole answer: a scheduler (or
anything at its address) that sends one byte a second keeps every read alive.  A poll
therefore runs inside :func:`poll_deadline`; the client checks :func:`remaining`
before each request, bounds each request's timeout by it, checks it again after every
chunk read, and never sleeps past it between retries.  Past the deadline the endpoint
fails with :class:`DeadlineExceeded` (not retried) and the poll is recorded as failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("poll_deadline", default=None)


class DeadlineExceeded(Exception):
    """The poll's overall deadline passed; the message names the setting."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the poll's overall deadline of {seconds:g} s (SOURCES_POLL_DEADLINE_SECONDS) "
            "passed before the scheduler's answer was complete"
        )


@contextmanager
def poll_deadline(seconds: float | None) -> Iterator[None]:
    """Run the block under an overall deadline of *seconds* (None or <= 0: none)."""
    if seconds is None or seconds <= 0:
        yield
        return
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (None without one); raises once it has passed."""
    current = _deadline.get()
    if current is None:
        return None
    left = current[0] - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded(current[1])
    return left


def bounded(seconds: float) -> float:
    """*seconds*, cut to what is left of the deadline (raises once it has passed)."""
    left = remaining()
    return seconds if left is None else min(seconds, left)

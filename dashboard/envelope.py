"""The one decorator of the Celery envelopes: ids in, nothing returned, safe to redeliver.

Every task keeps its message until it finished (``acks_late``), puts it back when
the worker dies (``reject_on_worker_lost``) and retries only named transient
errors (broker or database connection); the services claim rows by conditional
updates, so a second delivery finds its work done or leased and does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

TRANSIENT_ERRORS = (OperationalError, InterfaceError, BrokerError)

_P = ParamSpec("_P")


def envelope(
    name: str, *, time_limit: int, max_retries: int = 3, retry_backoff: bool = False
) -> Callable[[Callable[_P, None]], Task[_P, None]]:
    """A shared task under the stable *name* with the envelope options above."""
    return shared_task(
        name=name,
        acks_late=True,
        reject_on_worker_lost=True,
        autoretry_for=TRANSIENT_ERRORS,
        retry_backoff=retry_backoff,
        max_retries=max_retries,
        time_limit=time_limit,
        ignore_result=True,
    )

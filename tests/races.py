"""Run callables at the same time, each in its own thread with its own database connection.

Shared by the race tests (``from races import in_threads``; see pythonpath in pyproject.toml).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections


def in_threads(*targets: Callable[[], Any], timeout: float = 120) -> list[Any]:
    """Run each target in its own thread; return its result or the exception it raised."""
    results: list[Any] = [None] * len(targets)

    def wrap(i: int, fn: Callable[[], Any]) -> None:
        try:
            results[i] = fn()
        except Exception as exc:  # reported to the test through the results
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=wrap, args=(i, fn)) for i, fn in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    return results

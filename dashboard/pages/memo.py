"""A small per-process memo of finished page parts (least recently used first out).

For values that are expensive to build, big, and read as they are: kept as
objects (no pickling), so a hit costs a dictionary lookup.  Callers key them by
everything the value depends on (a snapshot's id, checksum and import time, the
request's choices) and never mutate what they get.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

_V = TypeVar("_V")

#: Every memo made, so that tests can start from empty ones (:func:`clear_all`).
_ALL: list[Memo[object]] = []


class Memo(Generic[_V]):
    """At most *size* values, the least recently used dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[Hashable, _V] = OrderedDict()
        self._lock = threading.Lock()
        _ALL.append(self)  # type: ignore[arg-type]

    def get(self, key: Hashable, build: Callable[[], _V]) -> _V:
        """The value kept for *key*, else *build()* (kept for the next call)."""
        with self._lock:
            if key in self._values:
                self._values.move_to_end(key)
                return self._values[key]
        value = build()
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._values

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


def clear_all() -> None:
    """Empty every memo (a test database reuses ids, checksums and import times)."""
    for memo in _ALL:
        memo.clear()

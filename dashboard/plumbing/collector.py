"""Pausing Python's cyclic garbage collector around one bulk operation."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic garbage collector off; on again after, if it was on.

    A config of 10,000 queues makes millions of short-lived objects (YAML nodes, queue
    specs, rows); each full collection the allocations trigger walks every live object
    of the process, and their cost grows faster than the config
    (docs/benchmarks/config-reimport.md). Objects are still freed as their last
    reference goes; only garbage in reference cycles waits for the block's end. Nested
    blocks, and blocks in other threads, leave the collector as the outermost found it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

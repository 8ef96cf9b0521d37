"""Where the test command's CPU goes: each test's CPU time, written as JSON lines.

Not loaded by default. ``./scripts/test -p support.cputimes`` writes, per xdist worker,
``artifacts/cpu-times/<worker>.jsonl``: one line per test with its id, its wall time,
the CPU time of the test process (``self``) and of the child processes reaped meanwhile
(``children``: a process is counted when it is reaped, which may be in a later test),
in seconds, setup and teardown included. See docs/development/testing.md.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

OUT = Path(__file__).resolve().parents[2] / "artifacts" / "cpu-times"

_out: IO[str] | None = None


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    global _out
    if _out is None:
        OUT.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = (OUT / f"{worker}.jsonl").open("w")
    wall, (own, children) = time.monotonic(), _cpu()
    try:
        return (yield)
    finally:
        own_after, children_after = _cpu()
        line = {
            "id": item.nodeid,
            "wall": round(time.monotonic() - wall, 3),
            "self": round(own_after - own, 3),
            "children": round(children_after - children, 3),
        }
        _out.write(json.dumps(line) + "\n")
        _out.flush()

"""Where the test command's CPU goes: each test's CPU time, written as JSON lines.

Not loaded by default. ``./scripts/test -p support.cputimes`` writes, per xdist worker,
``artifacts/cpu-times/<worker>.jsonl``: one line per test with

- ``id``, ``wall`` (seconds), ``self`` (the CPU time of the test process) and
  ``children`` (of the child processes reaped meanwhile: a process is counted when it
  is reaped, which may be in a later test), setup and teardown included;
- ``phases``: the same three figures for ``setup``, ``call`` and ``teardown`` apart;
- ``fixtures``: each fixture set up for this test (a module- or session-scoped one is
  set up only for the first test that needs it), as ``name (scope)`` -> ``[wall, self,
  children]``. The fixtures a fixture names as arguments are set up before it and
  counted apart; those it asks for with ``request.getfixturevalue`` are counted in it
  too (pytest-django's ``_django_db_marker`` holds the test's database set-up so).

``python -m support.cputimes`` (from ``tests/``) sums the files: modules and fixtures by
CPU time, the longest tests by wall time. See docs/development/testing.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

OUT = Path(__file__).resolve().parents[2] / "artifacts" / "cpu-times"

_out: IO[str] | None = None
_phases: dict[str, list[float]] = {}
_fixtures: dict[str, list[float]] = {}


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _now() -> tuple[float, float, float]:
    return (time.monotonic(), *_cpu())


def _since(start: tuple[float, float, float]) -> list[float]:
    return [round(after - before, 3) for before, after in zip(start, _now(), strict=True)]


def _open() -> IO[str]:
    global _out
    if _out is None:
        OUT.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _out = (OUT / f"{worker}.jsonl").open("w")
    return _out


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[Any]:
    """Each test module's collection (its import, its parameters built) as a line with
    ``collect`` instead of ``id``: every xdist worker collects every module."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    start = _now()
    try:
        return (yield)
    finally:
        wall, own, children = _since(start)
        line = {"collect": collector.nodeid, "wall": wall, "self": own, "children": children}
        _open().write(json.dumps(line) + "\n")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Iterator[Any]:
    start = _now()
    try:
        return (yield)
    finally:
        spent = _since(start)
        name = f"{fixturedef.argname} ({fixturedef.scope})"
        if name in _fixtures:
            _fixtures[name] = [a + b for a, b in zip(_fixtures[name], spent, strict=True)]
        else:
            _fixtures[name] = spent


def _phase(name: str) -> Any:
    @pytest.hookimpl(wrapper=True)
    def hook(item: pytest.Item, *args: Any) -> Iterator[None]:
        start = _now()
        try:
            return (yield)
        finally:
            _phases[name] = _since(start)

    return hook


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    out = _open()
    _phases.clear()
    _fixtures.clear()
    start = _now()
    try:
        return (yield)
    finally:
        wall, own, children = _since(start)
        line = {
            "id": item.nodeid,
            "wall": wall,
            "self": own,
            "children": children,
            "phases": dict(_phases),
            "fixtures": {k: [round(x, 3) for x in v] for k, v in _fixtures.items()},
        }
        out.write(json.dumps(line) + "\n")
        out.flush()


def _report(folder: Path, top: int) -> None:
    lines = []
    for path in sorted(folder.glob("*.jsonl")):
        mine = [json.loads(line) for line in path.open()]
        tests_here = [line for line in mine if "id" in line]
        if tests_here:
            # the worker's last teardown ends its session: the session-scoped processes
            # (Chromium, the OpenID provider, the live server's) are reaped there
            last = tests_here[-1]
            ended = last.get("phases", {}).get("teardown", [0.0, 0.0, 0.0])[2]
            last["children"] -= ended
            mine.append(
                {"id": f"(session end of {path.stem})", "wall": 0.0, "self": 0.0, "children": ended}
            )
        lines += mine
    tests = [line for line in lines if "id" in line]
    collected = [line for line in lines if "collect" in line]
    if collected:
        cpu = sum(c["self"] + c["children"] for c in collected)
        workers = len(list(folder.glob("*.jsonl")))
        print(f"collection: CPU {cpu:.1f} s in {workers} processes")
        by_module = collections.Counter[str]()
        for c in collected:
            by_module[c["collect"]] += c["self"] + c["children"]
        for name, s in by_module.most_common(5):
            print(f"{s:7.1f}  {name}")
        print()
    cpu = sum(t["self"] + t["children"] for t in tests)
    own = sum(t["self"] for t in tests)
    count = sum(not t["id"].startswith("(") for t in tests)
    print(
        f"{count} tests: CPU {cpu:.1f} s (test processes {own:.1f} s, reaped children "
        f"{cpu - own:.1f} s); wall summed over workers {sum(t['wall'] for t in tests):.1f} s"
    )
    modules: collections.Counter[str] = collections.Counter()
    module_wall: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    fixtures: collections.Counter[str] = collections.Counter()
    fixture_counts: collections.Counter[str] = collections.Counter()
    for t in tests:
        module = t["id"].split("::")[0]
        modules[module] += t["self"] + t["children"]
        module_wall[module] += t["wall"]
        counts[module] += 1
        for name, (_wall, s, c) in t.get("fixtures", {}).items():
            fixtures[name] += s + c
            fixture_counts[name] += 1
    print(f"\nmodules by CPU (top {top}): CPU s, wall s, tests")
    for name, s in modules.most_common(top):
        print(f"{s:7.1f} {module_wall[name]:7.1f} {counts[name]:4d}  {name}")
    print(f"\nfixtures by CPU of their set-ups (top {top}): CPU s, set-ups")
    for name, s in fixtures.most_common(top):
        print(f"{s:7.1f} {fixture_counts[name]:5d}  {name}")
    print(f"\ntests by wall time (top {top}): wall s, CPU s")
    for t in sorted(tests, key=lambda t: -t["wall"])[:top]:
        print(f"{t['wall']:7.1f} {t['self'] + t['children']:7.1f}  {t['id']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", type=Path, default=OUT)
    parser.add_argument("--top", type=int, default=20)
    arguments = parser.parse_args()
    _report(arguments.folder, arguments.top)
    sys.exit(0)

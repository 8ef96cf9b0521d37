"""What a process imports when Django starts (docs/benchmarks/startup.md).

Every process of the product and hundreds per test run set Django up; what the start
imports, each of them pays for. These tests keep out of it what only a task, a page or
an API request needs, without timing anything: a fresh interpreter sets Django up with
the production settings and reports its ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Imported by what a task, a page or a request runs, never by django.setup().
NOT_AT_START = (
    "dashboard.services",  # the tasks and admins import them where they run
    "dashboard.importers",
    "dashboard.planning",
    "dashboard.alerting.delivery",
    "dashboard.sources.services",
    "dashboard.sources.poll",
    "engine",
    "ruamel",
    "celery.beat",  # beat's scheduler is in dashboard.beat
)

TASKS = {
    "dashboard.execute_run",
    "dashboard.sweep_quota_changes",
    "dashboard.run_import_job",
    "dashboard.warm_snapshot",
    "dashboard.deliver_alert",
    "dashboard.sweep_alert_deliveries",
    "dashboard.poll_cluster_sources",
    "dashboard.poll_cluster_source",
    "dashboard.prune_snapshots",
}

# Modules a process may import first once Django is set up (the URL confs, the API's
# permission setting, the middleware, the tasks' code): each must import on its own.
# The services used to be imported by every start, which hid circles behind them.
ENTRY_MODULES = (
    "dashboard.urls",
    "dashboard.api.urls",
    "dashboard.pages.urls",
    "dashboard.access.api",
    "dashboard.access.pages",
    "dashboard.access.grants",
    "dashboard.access.redaction",
    "dashboard.access.scoping",
    "dashboard.alerting.delivery",
    "dashboard.services",
    "dashboard.sources.services",
    "dashboard.sources.retention",
)

_SCRIPT = """
import json, os, sys
import django

django.setup()
from celery.signals import worker_init

from dashboard.celery import app

report = {"setup": sorted(sys.modules), "tasks": sorted(app.tasks)}
failed = {}
for name in %r:
    pid = os.fork()
    if pid == 0:  # a child imports the module first, the parent stays as set up
        try:
            __import__(name)
        except Exception as exc:
            print(json.dumps({name: repr(exc)}), file=sys.stderr, flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed[name] = status
report["failed"] = failed
worker_init.send(sender=None)  # what a worker does before its pool starts
report["worker"] = sorted(sys.modules)
print(json.dumps(report))
"""


def _start(entries: tuple[str, ...]) -> dict[str, object]:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="dashboard.settings")
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT % (entries,)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    report["stderr"] = proc.stderr
    return report


def _under(modules: object, prefixes: tuple[str, ...]) -> list[str]:
    assert isinstance(modules, list)
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes)]


@pytest.mark.subprocess
def test_django_start_imports_no_task_code_and_registers_every_task() -> None:
    report = _start(ENTRY_MODULES)
    assert _under(report["setup"], NOT_AT_START) == []
    assert isinstance(report["tasks"], list)
    assert set(report["tasks"]) >= TASKS
    # a worker imports the tasks' code before forking its pool, so its processes share it
    worker = ("dashboard.services", "dashboard.sources.services", "dashboard.alerting.delivery")
    assert {m.split(".")[1] for m in _under(report["worker"], worker)} == {
        "services",
        "sources",
        "alerting",
    }
    # each entry module imports on its own after the start (no circle needs an order)
    assert report["failed"] == {}, report["stderr"]

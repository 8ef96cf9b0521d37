"""The test database of each pytest-xdist worker, copied from one migrated template.

pytest-django's own ``django_db_setup`` has every xdist worker create its test database
by running every migration: four workers, four migrations of the whole history at the
same time. Here the first worker to need a database migrates a template once, under a
lock file shared by the run's workers, and every worker (that one too) gets its own
copy of it: ``CREATE DATABASE ... TEMPLATE`` on PostgreSQL, a file copy on SQLite.
Each worker then uses its own database exactly as before (``test_<name>_gwN``, or the
SQLite file pytest-django names), and drops it at its end; the last worker to end also
drops the template (one that starts later builds it again).

Without xdist, :func:`setup` is Django's ``setup_databases``, as in pytest-django.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.test.utils import setup_databases, teardown_databases

TEMPLATE_SUFFIX = "_tmpl"


@contextmanager
def _locked(shared: Path) -> Iterator[dict[str, Any]]:
    """The run's template record (read and written back) under the shared lock."""
    shared.mkdir(parents=True, exist_ok=True)
    record_path = shared / "test-db-template.json"
    with (shared / "test-db-template.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record: dict[str, Any] = (
            json.loads(record_path.read_text()) if record_path.exists() else {"users": 0}
        )
        yield record
        record_path.write_text(json.dumps(record))


def _template_name(shared: Path, worker_db: str, worker: str) -> str:
    if connection.vendor == "sqlite":
        return str(shared / "test-db-template.sqlite3")
    return worker_db.removesuffix(f"_{worker}") + TEMPLATE_SUFFIX


def _build_template(name: str, verbosity: int) -> None:
    """Create and migrate the template database *name*; the connection left as it was."""
    test_settings = connection.settings_dict["TEST"]
    worker_test_name = test_settings.get("NAME")
    original_name = connection.settings_dict["NAME"]
    test_settings["NAME"] = name
    try:
        connection.creation.create_test_db(
            verbosity=verbosity, autoclobber=True, serialize=False, keepdb=False
        )
    finally:
        connection.close()
        test_settings["NAME"] = worker_test_name
        connection.settings_dict["NAME"] = original_name
        settings.DATABASES[connection.alias]["NAME"] = original_name


def _drop(name: str) -> None:
    """Remove the database *name*, if there is one (on SQLite, its WAL files too)."""
    if connection.vendor == "sqlite":
        for leftover in (name, f"{name}-wal", f"{name}-shm"):
            if os.path.exists(leftover):
                os.remove(leftover)
        return
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _copy(template: str, target: str) -> None:
    """Make the database *target* a copy of *template* (replacing any old one)."""
    _drop(target)
    if connection.vendor == "sqlite":
        shutil.copyfile(template, target)
        return
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{target}" TEMPLATE "{template}"')


def copy_template(shared: Path | None, target: str) -> bool:
    """Make the PostgreSQL database *target*, on this process's server, a copy of the
    run's migrated template (replacing any old one); ``False`` when there is none to
    copy (SQLite, no xdist, or no worker holds a test database)."""
    if shared is None or connection.vendor != "postgresql":
        return False
    with _locked(shared) as record:
        template = record.get("template")
        if not template or int(record.get("users", 0)) <= 0:
            return False
        _copy(str(template), target)
    return True


def setup(shared: Path | None, worker: str | None, verbosity: int) -> list[Any]:
    """This process's test database; what :func:`teardown` takes back."""
    if shared is None or worker is None or connection.vendor not in ("sqlite", "postgresql"):
        return list(setup_databases(verbosity=verbosity, interactive=False))
    original_name = connection.settings_dict["NAME"]
    # the name Django's create_test_db gives it (TEST NAME, with pytest-django's _gwN)
    worker_db = connection.settings_dict["TEST"].get("NAME") or (
        "test_" + connection.settings_dict["NAME"]
    )
    template = _template_name(shared, worker_db, worker)
    with _locked(shared) as record:
        if record.get("template") != template:
            _build_template(template, verbosity)
            record["template"] = template
        record["users"] = int(record.get("users", 0)) + 1
        connection.close()
        _copy(template, worker_db)
    # as Django's create_test_db leaves it: this process on its own database
    settings.DATABASES[connection.alias]["NAME"] = worker_db
    connection.settings_dict["NAME"] = worker_db
    connection.ensure_connection()
    return [(connection, original_name, True)]


def teardown(config: list[Any], shared: Path | None, worker: str | None, verbosity: int) -> None:
    """Drop this process's test database; the last worker drops the template too."""
    teardown_databases(config, verbosity=verbosity)
    if shared is None or worker is None or connection.vendor not in ("sqlite", "postgresql"):
        return
    with _locked(shared) as record:
        record["users"] = int(record.get("users", 0)) - 1
        if record["users"] <= 0 and record.get("template"):
            _drop(str(record.pop("template")))
            record["users"] = 0

"""Every model change comes with its migration: ``makemigrations --check`` finds nothing
to write for any app (a changed field, its choices or labels included)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_lacks_its_migration() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:
        pytest.fail(f"models changed without a migration (exit {exc.code}):\n{out.getvalue()}")

"""A config import stores the same rows as before its writes were made set-based: the
sequence of tests/dashboard/reimport_rows.py (adds, removes, renames, maxes lowered and
raised, guarantees, ACLs, properties and delays changed, with snapshots, events, a planned
change and an observed quota preemption between the imports) leaves, field by field, the
rows main stored (tests/dashboard/data/reimport-rows.json, written by that module's
script on main before the change)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reimport_rows import run_sequence, stored_rows

pytestmark = pytest.mark.django_db

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "reimport-rows.json"


def test_reimport_sequence_stores_the_rows_main_stored(staff: Any) -> None:
    """Every row of every model the imports write equals the one main stored."""
    expected = json.loads(CAPTURED.read_text())
    run_sequence(staff)
    actual = stored_rows()
    assert sorted(expected) == sorted(actual)
    for name in expected:
        assert len(expected[name]) == len(actual[name]), name
        for want, got in zip(expected[name], actual[name], strict=True):
            assert want == got, name

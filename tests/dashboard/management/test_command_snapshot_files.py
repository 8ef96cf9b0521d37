"""import_snapshot reads each file when the importer takes it, never more than its limit."""

from __future__ import annotations

import gc
import os
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from dashboard.management.commands.import_snapshot import Command, SnapshotFiles
from dashboard.models import ClusterSnapshot
from dashboard.services import snapshot_allocations


def test_folder_files_are_read_when_taken(tmp_path: Path) -> None:
    """The folder's .json files, by name; each read from disk at the time it is taken."""
    (tmp_path / "b.json").write_bytes(b"[1]")
    (tmp_path / "a.json").write_bytes(b"[]")
    (tmp_path / "notes.txt").write_bytes(b"not a snapshot")
    files = SnapshotFiles(tmp_path, limit=100)
    assert list(files) == ["a.json", "b.json"]
    (tmp_path / "b.json").write_bytes(b"[2]")
    assert dict(files) == {"a.json": b"[]", "b.json": b"[2]"}


def test_a_read_stops_one_byte_past_the_limit(tmp_path: Path) -> None:
    """A file over the limit reads as limit + 1 bytes: enough to refuse it, no more."""
    (tmp_path / "big.json").write_bytes(b"[" + b"1," * 1000 + b"1]")
    files = SnapshotFiles(tmp_path / "big.json", limit=10)
    assert files["big.json"] == b"[1,1,1,1,1,"


@pytest.mark.parametrize("name", ["missing.json", "empty-folder"])
def test_missing_input_is_a_command_error_or_os_error(tmp_path: Path, name: str) -> None:
    """A folder without .json files is refused by name; a missing file at once."""
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises((CommandError, FileNotFoundError)):
        SnapshotFiles(tmp_path / name, limit=10)


@pytest.mark.django_db
def test_the_command_leaves_the_collector_as_it_found_it(fixtures_dir: Path) -> None:
    """The cyclic collector is paused for the import only, also when it fails."""
    assert gc.isenabled()
    call_command("import_snapshot", str(fixtures_dir / "rest"), stdout=StringIO())
    assert gc.isenabled()
    with pytest.raises(CommandError):
        call_command("import_snapshot", str(fixtures_dir / "rest" / "partition_nodes.json"))
    assert gc.isenabled()


@pytest.mark.django_db
def test_the_command_line_keeps_its_parse_and_the_collector_off_to_the_end(
    fixtures_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the command line, which ends the process at once, the parse is not freed
    and the collector not resumed: the process's end frees everything."""
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    # Django closes the connections on the way out; the test's transaction needs its own
    monkeypatch.setattr(connections, "close_all", lambda: None)
    out = StringIO()
    command = Command(stdout=out, stderr=StringIO())
    try:
        command.run_from_argv(["manage.py", "import_snapshot", str(fixtures_dir / "rest")])
        assert exits == [0]
        assert not gc.isenabled()
        parsed = command._parsed
        snapshot = ClusterSnapshot.objects.get(pk=int(out.getvalue()))
        assert parsed.cluster is not None
        assert snapshot_allocations(snapshot).count() == len(parsed.cluster.allocations) > 0
        # the importer's dicts were released during the store; the engine's objects stay
        assert parsed.scenario["allocations"] == []
    finally:
        gc.enable()

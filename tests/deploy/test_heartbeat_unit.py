"""The heartbeat file's check (dashboard/heartbeat.py), run as the probe runs it: by its
path, with the standard library only (``python -I``), so a probe never imports Django."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deploy_support import ROOT

from dashboard import heartbeat

SCRIPT = ROOT / "dashboard" / "heartbeat.py"


def _probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def test_a_fresh_file_is_alive_an_old_or_missing_one_is_not(tmp_path: Path) -> None:
    path = tmp_path / "worker.alive"
    assert heartbeat.check(str(path), 60)[0] is False
    heartbeat.touch(str(path))
    ok, line = heartbeat.check(str(path), 60)
    assert ok, line
    old = time.time() - 120
    os.utime(path, (old, old))
    ok, line = heartbeat.check(str(path), 60)
    assert not ok
    assert "last touched 120 s ago (max 60 s)" in line


def test_touch_without_a_configured_file_does_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(heartbeat.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    heartbeat.touch()  # no file configured: no error, nothing written
    assert list(tmp_path.iterdir()) == []


def test_the_probe_command_exits_0_1_or_64(tmp_path: Path) -> None:
    path = tmp_path / "beat.alive"
    missing = _probe(str(path), "60")
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr
    path.touch()
    alive = _probe(str(path), "60")
    assert alive.returncode == 0, alive.stderr
    assert alive.stdout.startswith("alive: ")
    wrong = _probe(str(path), "a minute")
    assert wrong.returncode == 64
    assert "MAX_AGE_SECONDS must be a number of seconds, not 'a minute'" in wrong.stderr
    assert _probe(str(path)).returncode == 64

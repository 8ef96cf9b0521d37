"""A short run of the load test (5 s, 5 readers) against the real stack: no errors, no write
lost.  Latency is printed, never asserted (the full 60 s / 50 clients run is in
docs/benchmarks/loadtest.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
ADMIN_URL = os.environ.get(
    "LOADTEST_ADMIN_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def test_load_test_smoke_run_has_no_errors_and_loses_no_write(tmp_path: Path) -> None:
    try:
        psycopg.connect(ADMIN_URL, connect_timeout=5).close()
    except psycopg.OperationalError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {ADMIN_URL} cannot be reached in CI: {exc}")
        pytest.skip(f"PostgreSQL at {ADMIN_URL} cannot be reached: {exc}")
    out = tmp_path / "summary.json"
    proc = subprocess.run(
        [
            sys.executable,
            "loadtest/run.py",
            "--duration",
            "5",
            "--clients",
            "5",
            "--admin-database-url",
            ADMIN_URL,
            "--summary",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=540,
    )
    print(proc.stdout[-3000:])
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["read_requests"] > 0
    assert (figures["errors"], figures["error_samples"]) == (0, [])
    assert figures["lost"] == []
    assert "stopped 4 processes" in proc.stdout

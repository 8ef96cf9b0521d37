"""Where the shared YuniKorn fixtures are, for the tests that do without Django settings:
beside the repository (as dashboard.settings finds them) unless DASHBOARD_FIXTURES_DIR
says otherwise."""

from __future__ import annotations

import os
from pathlib import Path

FIXTURES = Path(
    os.environ.get(
        "DASHBOARD_FIXTURES_DIR",
        Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "yunikorn",
    )
)

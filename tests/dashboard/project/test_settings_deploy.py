"""Production settings: `manage.py check --deploy` passes with DEBUG off and a real key."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest


def _check(env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # a browser test in the same process may have set DJANGO_ALLOW_ASYNC_UNSAFE (async.E001)
    unset = ("DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.subprocess
def test_check_deploy_passes_in_production_mode() -> None:
    proc = _check(
        {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(64), "ALLOWED_HOSTS": "dash.example"}
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.subprocess
def test_check_deploy_flags_the_development_key() -> None:
    proc = _check({"DEBUG": "false"})
    assert proc.returncode != 0
    assert "SECRET_KEY" in proc.stderr

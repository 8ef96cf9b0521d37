"""DASHBOARD_PUBLIC_URL: the settings one URL derives (dashboard.publicurl)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest
from deploy_support import ROOT

from dashboard.publicurl import HSTS_SECONDS, PublicUrlError, derived_settings


def test_an_https_url_derives_the_proxy_and_cookie_settings() -> None:
    assert derived_settings("https://dash.example.org:8443/") == {
        "ALLOWED_HOSTS": ["dash.example.org"],
        "CSRF_TRUSTED_ORIGINS": ["https://dash.example.org:8443"],
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https"),
        "SECURE_SSL_REDIRECT": True,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SECURE_HSTS_SECONDS": HSTS_SECONDS,
    }


def test_an_http_url_derives_the_host_only() -> None:
    derived = derived_settings("http://dash.internal")
    assert derived["ALLOWED_HOSTS"] == ["dash.internal"]
    assert (derived["SECURE_SSL_REDIRECT"], derived["SECURE_PROXY_SSL_HEADER"]) == (False, None)
    assert derived_settings("") == {}


@pytest.mark.parametrize("bad", ["dash.example.org", "ftp://dash.example.org", "https://"])
def test_a_url_that_is_not_absolute_http_is_refused_naming_the_variable(bad: str) -> None:
    with pytest.raises(PublicUrlError, match="DASHBOARD_PUBLIC_URL"):
        derived_settings(bad)


def test_check_deploy_passes_with_only_the_public_url_and_a_key() -> None:
    """Behind the proxy: DASHBOARD_PUBLIC_URL and SECRET_KEY are all `check --deploy` needs."""
    unset = ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if k not in unset and not k.startswith("SECURE_")}
    env.update(
        {
            "DASHBOARD_PUBLIC_URL": "https://dash.example.org",
            "SECRET_KEY": secrets.token_urlsafe(64),
        }
    )
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings as s; "
            "print(s.ALLOWED_HOSTS, s.CSRF_TRUSTED_ORIGINS, s.SECURE_PROXY_SSL_HEADER, "
            "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT)",
        ],
        env={**env, "DJANGO_SETTINGS_MODULE": "dashboard.settings"},
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert shown.stdout.strip() == (
        "['localhost', '127.0.0.1', 'dash.example.org'] ['https://dash.example.org'] "
        "('HTTP_X_FORWARDED_PROTO', 'https') True True True"
    )

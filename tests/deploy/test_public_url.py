"""DASHBOARD_PUBLIC_URL: the settings one URL derives (dashboard.publicurl)."""

from __future__ import annotations

import pytest

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

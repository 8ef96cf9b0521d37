"""Settings derived from ``DASHBOARD_PUBLIC_URL``, the one variable of a deployment
behind a TLS-terminating proxy (an ingress, a load balancer).

Given ``https://dash.example.org`` (the address people type), the dashboard:

- accepts that host (``ALLOWED_HOSTS``) and that origin for CSRF;
- trusts the proxy's ``X-Forwarded-Proto: https`` (``SECURE_PROXY_SSL_HEADER``): the
  proxy must set it and clients must not reach the pods around the proxy;
- sends cookies only over HTTPS, redirects plain HTTP to HTTPS and sends HSTS.

An ``http://`` URL (a trial without TLS) derives the host and origin only.  Each
derived setting can still be overridden by its own variable.
"""

from __future__ import annotations

from typing import TypedDict
from urllib.parse import urlsplit

HSTS_SECONDS = 365 * 24 * 3600


class Derived(TypedDict, total=False):
    """The settings a public URL implies (none for an empty URL)."""

    ALLOWED_HOSTS: list[str]
    CSRF_TRUSTED_ORIGINS: list[str]
    SECURE_PROXY_SSL_HEADER: tuple[str, str] | None
    SECURE_SSL_REDIRECT: bool
    SESSION_COOKIE_SECURE: bool
    CSRF_COOKIE_SECURE: bool
    SECURE_HSTS_SECONDS: int


class PublicUrlError(ValueError):
    """``DASHBOARD_PUBLIC_URL`` is not an absolute http(s) URL."""


def derived_settings(public_url: str) -> Derived:
    """The settings *public_url* implies (empty for an empty URL).

    >>> derived_settings("https://dash.example.org")["CSRF_TRUSTED_ORIGINS"]
    ['https://dash.example.org']
    """
    if not public_url:
        return Derived()
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PublicUrlError(
            f"DASHBOARD_PUBLIC_URL={public_url!r} must be an absolute http:// or https:// URL"
        )
    origin = f"{parts.scheme}://{parts.netloc}"
    secure = parts.scheme == "https"
    return Derived(
        ALLOWED_HOSTS=[parts.hostname],
        CSRF_TRUSTED_ORIGINS=[origin],
        SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https") if secure else None,
        SECURE_SSL_REDIRECT=secure,
        SESSION_COOKIE_SECURE=secure,
        CSRF_COOKIE_SECURE=secure,
        SECURE_HSTS_SECONDS=HSTS_SECONDS if secure else 0,
    )

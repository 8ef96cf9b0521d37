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

from urllib.parse import urlsplit

HSTS_SECONDS = 365 * 24 * 3600


class PublicUrlError(ValueError):
    """``DASHBOARD_PUBLIC_URL`` is not an absolute http(s) URL."""


def derived_settings(public_url: str) -> dict[str, object]:
    """The settings *public_url* implies (empty for an empty URL).

    >>> derived_settings("https://dash.example.org")["CSRF_TRUSTED_ORIGINS"]
    ['https://dash.example.org']
    """
    if not public_url:
        return {}
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PublicUrlError(
            f"DASHBOARD_PUBLIC_URL={public_url!r} must be an absolute http:// or https:// URL"
        )
    origin = f"{parts.scheme}://{parts.netloc}"
    derived: dict[str, object] = {
        "ALLOWED_HOSTS": [parts.hostname],
        "CSRF_TRUSTED_ORIGINS": [origin],
    }
    secure = parts.scheme == "https"
    derived.update(
        {
            "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https") if secure else None,
            "SECURE_SSL_REDIRECT": secure,
            "SESSION_COOKIE_SECURE": secure,
            "CSRF_COOKIE_SECURE": secure,
            "SECURE_HSTS_SECONDS": HSTS_SECONDS if secure else 0,
        }
    )
    return derived

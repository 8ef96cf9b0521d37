"""The single sign-on's settings from the environment (read by ``dashboard.settings``,
before Django is set up: nothing of Django but its configuration error is imported).

| variable | meaning |
| --- | --- |
| ``OIDC_ISSUER`` | the provider's issuer URL; unset: local accounts only |
| ``OIDC_CLIENT_ID`` | this dashboard's client id at the provider |
| ``OIDC_CLIENT_SECRET_FILE`` | a file holding the client secret, or |
| ``OIDC_CLIENT_SECRET_ENV`` | the name of the variable holding it (neither: a public client) |
| ``OIDC_USERNAME_CLAIM`` | the claim that is YuniKorn's user name (``preferred_username``) |
| ``OIDC_GROUPS_CLAIM`` | the claim listing YuniKorn's groups (``groups``) |
| ``OIDC_SCOPES`` | the scopes asked for (``openid profile email groups``) |
| ``OIDC_PROVIDER_NAME`` | the sign-in button's words (``single sign-on``) |
| ``OIDC_SESSION_SECONDS`` | a provider sign-in's session length (8 hours) |
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class OidcSettings:
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    username_claim: str
    groups_claim: str
    provider_name: str
    sign_algorithm: str
    timeout: float
    verify_tls: bool
    session_seconds: int
    discovery_seconds: int
    leeway_seconds: int


def _secret(env: Any) -> str:
    path = env.str("OIDC_CLIENT_SECRET_FILE", default="")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"OIDC_CLIENT_SECRET_FILE {path!r} cannot be read: {exc.strerror}"
            ) from exc
    name = env.str("OIDC_CLIENT_SECRET_ENV", default="")
    if name:
        value = env.str(name, default="")
        if not value:
            raise ImproperlyConfigured(
                f"OIDC_CLIENT_SECRET_ENV names {name!r}, which is not set or is empty"
            )
        return str(value)
    return ""  # a public client: PKCE alone


def oidc_from_env(env: Any) -> OidcSettings | None:
    """The sign-in settings, or None without ``OIDC_ISSUER``."""
    issuer = env.str("OIDC_ISSUER", default="").rstrip("/")
    if not issuer:
        return None
    client_id = env.str("OIDC_CLIENT_ID", default="")
    if not client_id:
        raise ImproperlyConfigured("OIDC_ISSUER is set: OIDC_CLIENT_ID must be set too")
    return OidcSettings(
        issuer=issuer,
        client_id=client_id,
        client_secret=_secret(env),
        scopes=env.str("OIDC_SCOPES", default="openid profile email groups"),
        username_claim=env.str("OIDC_USERNAME_CLAIM", default="preferred_username"),
        groups_claim=env.str("OIDC_GROUPS_CLAIM", default="groups"),
        provider_name=env.str("OIDC_PROVIDER_NAME", default="single sign-on"),
        sign_algorithm=env.str("OIDC_SIGN_ALGORITHM", default="RS256"),
        timeout=env.float("OIDC_TIMEOUT_SECONDS", default=10.0),
        verify_tls=env.bool("OIDC_VERIFY_TLS", default=True),
        session_seconds=env.int("OIDC_SESSION_SECONDS", default=8 * 3600),
        discovery_seconds=env.int("OIDC_DISCOVERY_SECONDS", default=3600),
        leeway_seconds=env.int("OIDC_CLOCK_LEEWAY_SECONDS", default=30),
    )


def library_settings(oidc: OidcSettings) -> dict[str, Any]:
    """mozilla-django-oidc's own settings for *oidc* (its endpoints come from discovery
    in :mod:`dashboard.access.oidc`, not from these)."""
    return {
        "OIDC_RP_CLIENT_ID": oidc.client_id,
        "OIDC_RP_CLIENT_SECRET": oidc.client_secret,
        "OIDC_RP_SCOPES": oidc.scopes,
        "OIDC_RP_SIGN_ALGO": oidc.sign_algorithm,
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_USE_NONCE": True,
        "OIDC_STORE_ID_TOKEN": False,
        "OIDC_STORE_ACCESS_TOKEN": False,
        "OIDC_TIMEOUT": oidc.timeout,
        "OIDC_VERIFY_SSL": oidc.verify_tls,
        "OIDC_CREATE_USER": True,
    }

"""The single sign-on's settings from the environment: off without an issuer, the
client secret read by reference (a file, or the name of another variable), and a
clear error for each wrong setting."""

from __future__ import annotations

import os
from pathlib import Path

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured

from dashboard.access.oidc_env import library_settings, oidc_from_env

ISSUER = "https://sso.example.test/realms/ops"


def _env(monkeypatch: pytest.MonkeyPatch, **values: str) -> environ.Env:
    for name in list(os.environ):
        if name.startswith("OIDC_"):
            monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return environ.Env()


def test_without_an_issuer_only_local_accounts_sign_in(monkeypatch: pytest.MonkeyPatch) -> None:
    assert oidc_from_env(_env(monkeypatch, OIDC_CLIENT_ID="dashboard")) is None


def test_the_secret_is_read_from_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret-from-file\n")
    env = _env(
        monkeypatch,
        OIDC_ISSUER=ISSUER + "/",
        OIDC_CLIENT_ID="dashboard",
        OIDC_CLIENT_SECRET_FILE=str(secret),
        OIDC_GROUPS_CLAIM="roles",
    )
    oidc = oidc_from_env(env)
    assert oidc is not None
    assert oidc.issuer == ISSUER  # the trailing slash dropped
    assert oidc.client_secret == "s3cret-from-file"
    assert oidc.groups_claim == "roles"
    assert oidc.username_claim == "preferred_username"
    library = library_settings(oidc)
    assert library["OIDC_USE_PKCE"] is True
    assert library["OIDC_RP_CLIENT_SECRET"] == "s3cret-from-file"


def test_the_secret_is_read_from_a_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(
        monkeypatch,
        OIDC_ISSUER=ISSUER,
        OIDC_CLIENT_ID="dashboard",
        OIDC_CLIENT_SECRET_ENV="MY_IDP_SECRET",
        MY_IDP_SECRET="s3cret-from-env",
    )
    oidc = oidc_from_env(env)
    assert oidc is not None
    assert oidc.client_secret == "s3cret-from-env"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"OIDC_ISSUER": ISSUER}, "OIDC_CLIENT_ID must be set"),
        (
            {"OIDC_ISSUER": ISSUER, "OIDC_CLIENT_ID": "d", "OIDC_CLIENT_SECRET_FILE": "/nope/x"},
            "OIDC_CLIENT_SECRET_FILE '/nope/x' cannot be read",
        ),
        (
            {"OIDC_ISSUER": ISSUER, "OIDC_CLIENT_ID": "d", "OIDC_CLIENT_SECRET_ENV": "UNSET_X"},
            "OIDC_CLIENT_SECRET_ENV names 'UNSET_X', which is not set",
        ),
    ],
)
def test_a_wrong_setting_is_named(
    monkeypatch: pytest.MonkeyPatch, values: dict[str, str], message: str
) -> None:
    monkeypatch.delenv("UNSET_X", raising=False)
    with pytest.raises(ImproperlyConfigured, match=message):
        oidc_from_env(_env(monkeypatch, **values))

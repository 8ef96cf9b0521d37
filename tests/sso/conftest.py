"""Single sign-on tests against a real OpenID provider (oidc-provider on Node, on a
loopback port; tests/support/oidc_provider.py).  The dashboard side runs in Django's
test client: its callback URL is ``http://testserver/oidc/callback/``, registered at
the provider, which redirects there (the tests carry the redirect over)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.oidc_provider import Provider, dashboard_signs_in_with, start_provider, write_jwks

from dashboard.access.oidc_env import OidcSettings

CALLBACK = "http://testserver/oidc/callback/"

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="session")
def jwks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jwks(tmp_path_factory.mktemp("oidc") / "jwks.json")


@pytest.fixture(scope="session")
def idp(jwks: Path) -> Iterator[Provider]:
    with start_provider(jwks, [CALLBACK]) as provider:
        yield provider


@pytest.fixture(scope="session")
def other_idp(jwks: Path) -> Iterator[Provider]:
    """A second provider signing with the same keys under another issuer."""
    with start_provider(jwks, [CALLBACK]) as provider:
        yield provider


@pytest.fixture
def sso(settings: Any, idp: Provider) -> Iterator[OidcSettings]:
    """The dashboard set up for the provider (as OIDC_* variables would)."""
    settings.SECURE_SSL_REDIRECT = False  # the test client speaks plain HTTP
    with dashboard_signs_in_with(settings, idp.issuer) as configured:
        yield configured

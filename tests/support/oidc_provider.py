"""A real OpenID provider for the tests: ``oidc-provider`` (npm) run with Node.

:func:`start_provider` starts ``tests/sso/provider/server.js`` on a free loopback
port (installing its package with ``npm ci`` first when missing) and waits for it;
:func:`sign_in_at_provider` goes through its sign-in form as a browser would and
returns the redirect it answers with (the callback URL with the code), never
following it; :func:`exchange` trades a code for tokens at its token endpoint.
:func:`oidc_settings` is the dashboard's side (the client registered at the provider)
and :func:`dashboard_signs_in_with` sets the dashboard up with it for a test.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa

from dashboard.access import oidc
from dashboard.access.oidc_env import OidcSettings

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "sso" / "provider"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_jwks(path: Path) -> Path:
    """A fresh RSA signing key as a JWKS file (shared by providers that must agree)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk.update({"kid": "test-key", "use": "sig", "alg": "RS256"})
    path.write_text(json.dumps({"keys": [jwk]}))
    return path


def ensure_installed() -> None:
    """``npm ci`` in the provider's folder when its packages are missing."""
    if (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is missing: the single sign-on tests run oidc-provider with Node")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"], cwd=PROVIDER_DIR, capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.fail(f"npm ci failed in {PROVIDER_DIR}:\n{done.stderr[-2000:]}")


@dataclass
class Provider:
    issuer: str
    process: subprocess.Popen[str]


@contextmanager
def start_provider(
    jwks: Path, redirect_uris: list[str], *, issuer: str | None = None
) -> Iterator[Provider]:
    """The provider, listening; stopped (this process only) afterwards."""
    ensure_installed()
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is missing: the single sign-on tests run oidc-provider with Node")
    port = free_port()
    env = {
        "PATH": "/usr/bin:/bin",
        "PORT": str(port),
        "JWKS_FILE": str(jwks),
        "REDIRECT_URIS": " ".join(redirect_uris),
        "ISSUER": issuer or f"http://127.0.0.1:{port}",
    }
    proc = subprocess.Popen(
        [node, "server.js"],
        cwd=PROVIDER_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        for line in proc.stdout:  # its warnings, then "ready <issuer>"
            seen.append(line)
            if line.startswith("ready "):
                break
        else:
            pytest.fail("the OpenID provider did not start:\n" + "".join(seen))
        yield Provider(line.split(" ", 1)[1].strip(), proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def sign_in_at_provider(
    session: requests.Session, authorize_url: str, login: str, password: str = "any"
) -> str:
    """Follow *authorize_url* through the provider's sign-in form as *login*; the URL the
    provider finally redirects to (outside the provider), not followed."""
    answer = session.get(authorize_url, allow_redirects=False)
    provider_base = authorize_url.split("/auth", 1)[0]
    for _ in range(10):
        if answer.status_code in (302, 303):
            target = urljoin(answer.url, answer.headers["location"])
            if not target.startswith(provider_base):
                return target
            answer = session.get(target, allow_redirects=False)
            continue
        form = re.search(r'<form[^>]*action="([^"]+)"', answer.text)
        if answer.status_code != 200 or form is None:
            raise AssertionError(
                f"unexpected provider answer {answer.status_code}: {answer.text[:500]}"
            )
        answer = session.post(
            urljoin(answer.url, form.group(1)),
            data={"prompt": "login", "login": login, "password": password},
            allow_redirects=False,
        )
    raise AssertionError("the provider kept redirecting")


def authorize_url(issuer: str, client_id: str, redirect_uri: str, challenge: str) -> str:
    query = urlencode(
        {
            "client_id": client_id,
            "response_type": "code",
            "scope": "openid profile email groups",
            "redirect_uri": redirect_uri,
            "state": secrets.token_urlsafe(16),
            "nonce": "test-nonce",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    return f"{issuer}/auth?{query}"


def exchange(
    issuer: str, client_id: str, code: str, redirect_uri: str, verifier: str
) -> requests.Response:
    return requests.post(
        f"{issuer}/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": client_id,
            "client_secret": f"{client_id}-secret",
            "code_verifier": verifier,
        },
        timeout=10,
    )


def tokens_for(issuer: str, client_id: str, login: str, redirect_uri: str) -> dict[str, Any]:
    """A whole code flow for *client_id* as *login*: the token endpoint's answer."""
    verifier, challenge = pkce_pair()
    with requests.Session() as session:
        back = sign_in_at_provider(
            session, authorize_url(issuer, client_id, redirect_uri, challenge), login
        )
    code = re.search(r"[?&]code=([^&]+)", back)
    assert code is not None, back
    answer = exchange(issuer, client_id, code.group(1), redirect_uri, verifier)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def oidc_settings(issuer: str, **changes: Any) -> OidcSettings:
    """The dashboard's OIDC settings for the client the provider registers, *changes* applied."""
    base = OidcSettings(
        issuer=issuer,
        client_id="dashboard",
        client_secret="dashboard-secret",
        scopes="openid profile email groups",
        username_claim="preferred_username",
        groups_claim="groups",
        provider_name="Test IdP",
        sign_algorithm="RS256",
        timeout=5.0,
        verify_tls=True,
        session_seconds=3600,
        discovery_seconds=3600,
        leeway_seconds=0,
    )
    return dataclasses.replace(base, **changes)


@contextmanager
def dashboard_signs_in_with(settings: Any, issuer: str, **changes: Any) -> Iterator[OidcSettings]:
    """The dashboard set up for the provider at *issuer* (as OIDC_* variables would) on
    pytest-django's *settings*, the cached provider metadata forgotten before and after."""
    oidc.forget_provider()
    settings.OIDC = oidc_settings(issuer, **changes)
    try:
        yield settings.OIDC
    finally:
        oidc.forget_provider()

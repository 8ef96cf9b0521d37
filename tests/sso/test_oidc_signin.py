"""Sign-in through a real OpenID provider: the code flow with PKCE end to end, the
permissions a provider account gets from its groups, and every way a sign-in must be
refused (a tampered, expired, other issuer's or other audience's token, a replayed
callback or code, an unreachable provider, a provider name that is a local account's)."""

from __future__ import annotations

import base64
import json
import re
import time
from typing import Any

import pytest
import requests
from conftest import CALLBACK
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.test import Client
from rest_framework.test import APIClient
from support.oidc_provider import (
    Provider,
    free_port,
    oidc_settings,
    sign_in_at_provider,
    tokens_for,
)
from support.tenants import make_tenants

from dashboard import models
from dashboard.access import oidc
from dashboard.access.oidc_env import OidcSettings

pytestmark = [pytest.mark.django_db, pytest.mark.subprocess]


def sign_in(client: Client, login: str) -> tuple[Any, str]:
    """The dashboard's sign-in button, the provider's form as *login*, then the callback:
    (the callback's answer, the callback path)."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start.content
    assert "code_challenge=" in start["Location"]
    assert "code_challenge_method=S256" in start["Location"]
    with requests.Session() as browser:
        back = sign_in_at_provider(browser, start["Location"], login)
    assert back.startswith(CALLBACK), back
    path = back.removeprefix("http://testserver")
    return client.get(path), path


def test_a_provider_account_signs_in_with_its_groups(sso: OidcSettings) -> None:
    client = Client()
    answer, _ = sign_in(client, "alice")
    assert answer.status_code == 302, answer.content
    user = get_user_model().objects.get(username="alice")
    assert not user.is_staff
    assert not user.has_usable_password()
    identity = models.SignInIdentity.objects.get(user=user)
    assert identity.issuer == sso.issuer
    assert identity.subject == "alice"
    assert identity.groups == ["team-a"]
    assert client.session.get_expiry_age() == sso.session_seconds
    assert client.get("/access/").status_code == 200
    # a second sign-in finds the same account
    again, _ = sign_in(Client(), "alice")
    assert again.status_code == 302
    assert get_user_model().objects.filter(username="alice").count() == 1


def test_a_provider_account_gets_what_the_queue_acls_grant_its_groups(
    sso: OidcSettings,
) -> None:
    make_tenants(users=False)
    alice = Client()
    sign_in(alice, "alice")
    page = alice.get("/access/").content.decode()
    assert "You administer root.a through adminacl of root.a, config v1." in page
    assert "root.b" not in page
    own = alice.get("/queues/detail/", {"queue": "root.a.x"})
    assert own.status_code == 200
    assert "root.b" not in own.content.decode()  # nothing of the other tenant's queue
    denied = alice.get("/queues/detail/", {"queue": "root.b"})
    assert denied.status_code == 403
    # the page echoes the queue asked for (the scope form's field), and nothing of it
    text = denied.content.decode().replace('name="queue" value="root.b"', "")
    assert "root.b" not in text
    assert "ask-1" not in text  # root.b's pending ask
    # the tree: her queues whole, the other tenant's only as a share of their parent
    tree = alice.get("/queues/")
    assert tree.status_code == 200
    assert "root.a.x" in tree.content.decode()
    assert "root.b" not in tree.content.decode()
    assert "ask-1" not in tree.content.decode()
    mine = {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 3000}}
    assert (
        alice.post("/api/quota-changes/", mine, content_type="application/json").status_code == 201
    )
    theirs = {**mine, "queue_path": "root.b"}
    refused = alice.post("/api/quota-changes/", theirs, content_type="application/json")
    assert refused.status_code == 403
    assert b"root.b" not in refused.content
    # bob (group team-b; root.b's adminacl names him) the other way round
    bob = Client()
    sign_in(bob, "bob")
    assert bob.get("/queues/detail/", {"queue": "root.b"}).status_code == 200
    assert bob.get("/queues/detail/", {"queue": "root.a"}).status_code == 403


def test_an_api_token_carries_the_users_scope(sso: OidcSettings) -> None:
    make_tenants(users=False)
    alice = Client()
    sign_in(alice, "alice")
    page = alice.post("/access/").content.decode()
    token = re.search(r'<code id="api-token">([0-9a-f]+)</code>', page)
    assert token is not None
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.group(1)}")
    mine = {"partition": "default", "queue_path": "root.a", "new_max": {"vcore": 3000}}
    assert api.post("/api/quota-changes/", mine, format="json").status_code == 201
    refused = api.post("/api/quota-changes/", {**mine, "queue_path": "root.b"}, format="json")
    assert refused.status_code == 403
    assert api.get("/api/snapshots/").status_code == 403
    listed = api.get("/api/quota-changes/").json()["results"]
    assert [c["queue_path"] for c in listed] == ["root.a"]


def test_a_replayed_callback_is_refused(sso: OidcSettings) -> None:
    client = Client()
    first, path = sign_in(client, "alice")
    assert first.status_code == 302
    # the same callback again (its state is spent), in the same browser or another
    assert client.get(path).status_code == 403
    stranger = Client()
    assert stranger.get(path).status_code == 403
    assert "_auth_user_id" not in stranger.session


def test_a_replayed_code_is_refused_by_the_provider(sso: OidcSettings) -> None:
    client = Client()
    _, path = sign_in(client, "alice")
    code = re.search(r"code=([^&]+)", path)
    assert code is not None
    # a fresh sign-in started elsewhere, finished with the spent code
    other = Client()
    start = other.get("/oidc/authenticate/")
    state = re.search(r"state=([^&]+)", start["Location"])
    assert state is not None
    answer = other.get(f"/oidc/callback/?code={code.group(1)}&state={state.group(1)}")
    assert answer.status_code == 403
    assert b"Sign-in refused" in answer.content
    assert "_auth_user_id" not in other.session


def _backend(sso: OidcSettings) -> oidc.Backend:
    backend = oidc.Backend()
    backend.configure()
    return backend


def _tamper(token: str, **claims: Any) -> str:
    head, body, signature = token.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload.update(claims)
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"{head}.{forged}.{signature}"


def test_the_providers_own_token_is_accepted(sso: OidcSettings, idp: Provider) -> None:
    token = tokens_for(idp.issuer, "dashboard", "alice", CALLBACK)["id_token"]
    claims = _backend(sso).verify_token(token, nonce="test-nonce")
    assert claims["sub"] == "alice"
    assert claims["aud"] == "dashboard"


def test_a_tampered_token_is_refused(sso: OidcSettings, idp: Provider) -> None:
    token = tokens_for(idp.issuer, "dashboard", "alice", CALLBACK)["id_token"]
    with pytest.raises(SuspiciousOperation, match="refused"):
        _backend(sso).verify_token(_tamper(token, sub="bob"), nonce="test-nonce")


def test_a_token_for_another_audience_is_refused(sso: OidcSettings, idp: Provider) -> None:
    token = tokens_for(idp.issuer, "other", "alice", CALLBACK)["id_token"]
    with pytest.raises(SuspiciousOperation, match="Audience"):
        _backend(sso).verify_token(token, nonce="test-nonce")


def test_a_token_of_another_issuer_is_refused(
    sso: OidcSettings, idp: Provider, other_idp: Provider
) -> None:
    """Signed with the very same key, but issued by another provider."""
    token = tokens_for(other_idp.issuer, "dashboard", "alice", CALLBACK)["id_token"]
    with pytest.raises(SuspiciousOperation, match="issuer"):
        _backend(sso).verify_token(token, nonce="test-nonce")


def test_an_expired_token_is_refused(settings: Any, sso: OidcSettings, idp: Provider) -> None:
    """Client "short" gets ID tokens valid for one second."""
    settings.OIDC = oidc_settings(idp.issuer, client_id="short", client_secret="short-secret")
    token = tokens_for(idp.issuer, "short", "alice", CALLBACK)["id_token"]
    time.sleep(2.1)  # past the token's expiry (no leeway in these settings)
    with pytest.raises(SuspiciousOperation, match="expired"):
        _backend(settings.OIDC).verify_token(token, nonce="test-nonce")


def test_an_unreachable_provider_gets_a_clear_page_and_local_sign_in_works(
    settings: Any, sso: OidcSettings
) -> None:
    settings.OIDC = oidc_settings(f"http://127.0.0.1:{free_port()}")
    oidc.forget_provider()
    client = Client()
    answer = client.get("/oidc/authenticate/")
    assert answer.status_code == 503
    assert b"The identity provider cannot be reached" in answer.content
    get_user_model().objects.create_user("local-ops", password="pw-local-1234", is_staff=True)
    login = client.post("/login/", {"username": "local-ops", "password": "pw-local-1234"})
    assert login.status_code == 302
    assert client.get("/queues/").status_code in (200, 302)


def test_the_provider_cannot_sign_in_as_a_local_account(sso: OidcSettings) -> None:
    get_user_model().objects.create_user("bob", password="pw-local-bob-1234", is_staff=True)
    client = Client()
    answer, _ = sign_in(client, "bob")
    assert answer.status_code == 403
    assert b"a local account is named" in answer.content
    assert "_auth_user_id" not in client.session
    assert not models.SignInIdentity.objects.exists()


def test_sign_out_ends_the_session(sso: OidcSettings) -> None:
    client = Client()
    sign_in(client, "alice")
    assert client.get("/access/").status_code == 200
    client.post("/logout/")
    assert client.get("/access/").status_code == 302  # to the sign-in page


def test_a_code_in_the_local_sign_in_form_signs_nobody_in(sso: OidcSettings) -> None:
    """A provider code (say, an attacker's own) put in the URL of the local sign-in form
    is not exchanged: only the callback, with its state and nonce, signs in."""
    start = Client().get("/oidc/authenticate/")
    with requests.Session() as browser:
        back = sign_in_at_provider(browser, start["Location"], "mallory")  # code unspent
    query = back.split("?", 1)[1]
    client = Client()
    answer = client.post(f"/login/?{query}", {"username": "x", "password": "y"})
    assert answer.status_code == 200  # the form again, with its error
    assert "_auth_user_id" not in client.session

"""Sign-in through the organisation's OpenID Connect provider (authorization code with
PKCE), on mozilla-django-oidc, beside the local accounts.

Configured by environment (:func:`settings_from_env`, read by ``dashboard.settings``):
the issuer, the client id, the client secret *by reference* (a file, or the name of
another variable), the claims that give YuniKorn's user name and groups.  The
provider's endpoints and keys come from its discovery document
(``<issuer>/.well-known/openid-configuration``), fetched when a sign-in starts and
kept for a while, so a provider that is down never stops the local sign-in and the
dashboard starts without it.

A signed-in provider account is a dashboard user (never staff) with a
:class:`~dashboard.models.SignInIdentity` (issuer and subject): the provider can
never sign in as a local account of the same name.  Its groups claim is kept on each
sign-in and is its groups under the queue ACLs (:mod:`dashboard.access.grants`); its
API tokens are its own, so they carry its scope.

The ID token is checked beyond the library's signature check: issuer, audience
(the client id), expiry, issue time, subject and nonce; a code the provider refuses
(used already, expired) or a state not issued to this browser is refused.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from dashboard import models, signin
from dashboard.access.oidc_env import OidcSettings, library_settings
from dashboard.plumbing.clock import utcnow

logger = logging.getLogger(__name__)

#: the ID token's signing algorithms accepted (asymmetric only: the secret never signs)
ALGORITHMS = ("RS256", "ES256", "PS256")


def _conf() -> OidcSettings:
    if settings.OIDC is None:
        raise SuspiciousOperation("single sign-on is not configured (OIDC_ISSUER)")
    return settings.OIDC


def library_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's setting *attr*, from ``settings.OIDC`` (one source: the
    environment), else Django's settings, else *default*."""
    if settings.OIDC is not None:
        mine = library_settings(settings.OIDC)
        if attr in mine:
            return mine[attr]
    return import_from_settings(attr, *default)


class ProviderUnreachable(Exception):
    """The provider's discovery document or token endpoint could not be read."""


@dataclass(frozen=True)
class Provider:
    """The provider's endpoints, from its discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_lock = threading.Lock()
_cache: dict[str, tuple[float, Provider]] = {}


def provider() -> Provider:
    """The configured provider's endpoints (its discovery document, kept for
    ``OIDC_DISCOVERY_SECONDS``); :class:`ProviderUnreachable` when it cannot be read."""
    issuer = _conf().issuer
    with _lock:
        kept = _cache.get(issuer)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        answer = requests.get(url, timeout=_conf().timeout, verify=_conf().verify_tls)
        answer.raise_for_status()
        doc = answer.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnreachable(f"{url}: {exc.__class__.__name__}") from exc
    if not isinstance(doc, dict) or str(doc.get("issuer", "")).rstrip("/") != issuer:
        raise ProviderUnreachable(f"{url} names another issuer: {doc.get('issuer')!r}")
    try:
        found = Provider(
            issuer=issuer,
            authorization_endpoint=str(doc["authorization_endpoint"]),
            token_endpoint=str(doc["token_endpoint"]),
            userinfo_endpoint=str(doc["userinfo_endpoint"]),
            jwks_uri=str(doc["jwks_uri"]),
        )
    except KeyError as exc:
        raise ProviderUnreachable(f"{url} lacks {exc.args[0]}") from exc
    with _lock:
        _cache[issuer] = (time.monotonic() + _conf().discovery_seconds, found)
    return found


def forget_provider() -> None:
    """Drop the kept discovery documents (tests; a provider that moved)."""
    with _lock:
        _cache.clear()


class Backend(OIDCAuthenticationBackend):  # type: ignore[misc]  # the library is untyped
    """The provider's sign-in: tokens checked, the account found by issuer and subject."""

    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Nothing read from the provider here: Django builds every backend for every
        # sign-in, the local ones included, which must not wait on the provider.
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if request is None or settings.OIDC is None:
            return None
        if "code" not in request.GET or "state" not in request.GET:
            return None
        if not kwargs.get("nonce"):
            # only the callback view, which checked the state against the session and
            # hands over its nonce, signs in here: never a local sign-in form whose URL
            # carries someone else's code
            return None
        self.configure()
        return super().authenticate(request, **kwargs)

    def configure(self) -> None:
        """The provider's endpoints (discovery) and this client's settings."""
        found = provider()
        self.OIDC_OP_TOKEN_ENDPOINT = found.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = found.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks_uri
        self.OIDC_RP_CLIENT_ID = _conf().client_id
        self.OIDC_RP_CLIENT_SECRET = _conf().client_secret
        self.OIDC_RP_SIGN_ALGO = _conf().sign_algorithm
        self.OIDC_RP_IDP_SIGN_KEY = None

    def get_payload_data(self, token: bytes | str, key: Any) -> dict[str, Any]:
        """The ID token's claims, signature, issuer, audience and times checked."""
        alg = self.OIDC_RP_SIGN_ALGO
        if alg not in ALGORITHMS:
            raise SuspiciousOperation(f"OIDC_SIGN_ALGORITHM {alg!r} is not one of {ALGORITHMS}")
        try:
            header = jwt.get_unverified_header(token)
            if header.get("alg") != alg:
                raise SuspiciousOperation(f"the ID token is signed with {header.get('alg')!r}")
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=_conf().client_id,
                issuer=_conf().issuer,
                leeway=_conf().leeway_seconds,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise SuspiciousOperation(f"the ID token is refused: {exc}") from exc
        return claims

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> Any:
        """The userinfo answer over the ID token's claims (the provider may put the user
        name and groups in either); the subject must be the ID token's."""
        info = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is of another subject")
        return {**payload, **info, "iss": payload["iss"]}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        name = claims.get(_conf().username_claim)
        if not isinstance(name, str) or not name:
            self._refuse(f"the provider gave no {_conf().username_claim!r} claim")
            return False
        problem = signin.credential_problem("username", name)
        if problem is not None:
            self._refuse(f"the provider's user name {problem}")
            return False
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        return self.UserModel.objects.filter(
            signin_identity__issuer=claims["iss"], signin_identity__subject=str(claims["sub"])
        )

    def create_user(self, claims: dict[str, Any]) -> Any:
        name = str(claims[_conf().username_claim])
        with transaction.atomic():
            if self.UserModel.objects.filter(username=name).exists():
                self._refuse(
                    f"a local account is named {name!r}: the provider cannot sign in as it"
                )
                raise SuspiciousOperation("the user name is a local account's")
            user = self.UserModel.objects.create_user(name, email=claims.get("email") or "")
            user.set_unusable_password()
            user.save(update_fields=["password"])
            models.SignInIdentity.objects.create(
                user=user,
                issuer=claims["iss"],
                subject=str(claims["sub"]),
                groups=_groups(claims),
                signed_in_at=utcnow(),
            )
        return user

    def update_user(self, user: Any, claims: dict[str, Any]) -> Any:
        models.SignInIdentity.objects.filter(user=user).update(
            groups=_groups(claims), signed_in_at=utcnow()
        )
        return user

    def _refuse(self, why: str) -> None:
        logger.warning("single sign-on refused: %s", why)
        if getattr(self, "request", None) is not None:
            messages.error(self.request, f"Sign-in refused: {why}.")


def _groups(claims: dict[str, Any]) -> list[str]:
    value = claims.get(_conf().groups_claim)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    return sorted({g for g in value if isinstance(g, str) and g})


def unreachable(request: HttpRequest, why: str) -> HttpResponse:
    """The page said when the provider cannot be reached (503): local accounts still work."""
    logger.warning("identity provider unreachable: %s", why)
    return render(
        request,
        "dashboard/signin_unreachable.html",
        {"issuer": _conf().issuer, "provider_name": _conf().provider_name},
        status=503,
    )


def refused(request: HttpRequest, why: str) -> HttpResponse:
    logger.warning("single sign-on refused: %s", why)
    messages.error(request, "Sign-in through the identity provider was refused.")
    return render(
        request,
        "dashboard/signin_refused.html",
        {"provider_name": settings.OIDC.provider_name if settings.OIDC else "single sign-on"},
        status=403,
    )


class StartView(OIDCAuthenticationRequestView):  # type: ignore[misc]
    """``/oidc/authenticate/``: to the provider with state, nonce and a PKCE challenge."""

    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC.client_id if settings.OIDC else ""

    def get(self, request: HttpRequest) -> HttpResponse:
        if settings.OIDC is None:
            return refused(request, "single sign-on is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider().authorization_endpoint
        except ProviderUnreachable as exc:
            return unreachable(request, str(exc))
        response: HttpResponse = super().get(request)
        return response


class CallbackView(OIDCAuthenticationCallbackView):  # type: ignore[misc]
    """``/oidc/callback/``: the code exchanged (with the PKCE verifier) and checked."""

    get_settings = staticmethod(library_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if settings.OIDC is None:
            return refused(request, "single sign-on is not configured")
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnreachable as exc:
            return unreachable(request, str(exc))
        except requests.HTTPError as exc:  # the token endpoint refused the code
            code = exc.response.status_code if exc.response is not None else "no answer"
            return refused(request, f"the token endpoint answered {code}")
        except requests.RequestException as exc:
            return unreachable(request, f"{exc.__class__.__name__}")
        except SuspiciousOperation as exc:  # unknown state (replayed callback), bad token
            return refused(request, str(exc))
        return response

    def login_failure(self) -> HttpResponse:
        return refused(self.request, "the provider's answer was not accepted")

    def login_success(self) -> HttpResponse:
        response: HttpResponse = super().login_success()
        # the session ends after OIDC_SESSION_SECONDS, whatever the provider's session
        self.request.session.set_expiry(_conf().session_seconds)
        return response

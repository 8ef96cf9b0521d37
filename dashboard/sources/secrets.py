"""Source bearer tokens encrypted at rest (Fernet from ``cryptography``).

A database dump, a backup or a read-only SQL user shows ``fernet:…`` instead of a
token that opens the scheduler's REST API.  The keys are derived from
``SECRET_KEY`` (which encrypts) and ``SECRET_KEY_FALLBACKS`` (which still decrypt),
so rotating the secret key the way Django documents it keeps the tokens readable:
put the old key in the fallbacks, and ``manage.py reencrypt_source_tokens`` (or
any save) moves each token to the new key.  A token that none of the keys opens
(the secret key was replaced without a fallback) reads as an
:class:`UndecryptableToken`: the source shows "cannot be decrypted" and its polls
fail saying so, until staff enter the token again.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

PREFIX = "fernet:"
_CONTEXT = b"yunikorn-dashboard source token v1"


class UndecryptableToken(str):
    """A stored token that no configured key decrypts: empty text, true, and saved back
    unchanged (``stored``), so that nothing is lost before staff enter it again."""

    stored: str

    def __new__(cls, stored: str) -> UndecryptableToken:
        token = super().__new__(cls, "")
        token.stored = stored
        return token

    def __bool__(self) -> bool:  # a token is stored, even if unusable
        return True


UNDECRYPTABLE_MESSAGE = (
    "the stored bearer token cannot be decrypted with SECRET_KEY or SECRET_KEY_FALLBACKS "
    "(was the secret key replaced?): enter the token again"
)


def _fernet_key(secret: str) -> bytes:
    digest = hashlib.sha256(_CONTEXT + b"\0" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest)


def _fernet() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([Fernet(_fernet_key(s)) for s in secrets])


def encrypt(token: str) -> str:
    """``fernet:<token encrypted with the current key>``; empty stays empty."""
    if not token:
        return ""
    return PREFIX + _fernet().encrypt(token.encode()).decode("ascii")


def decrypt(stored: str) -> str:
    """The token of a stored value (a value from before encryption reads as itself)."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return _fernet().decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, UnicodeError, ValueError):
        return UndecryptableToken(stored)


class EncryptedTokenField(models.TextField[str, str]):
    """A text column holding :func:`encrypt`-ed values; Python sees the plain token."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> str | None:
        return None if value is None else decrypt(value)

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(PREFIX):
            return decrypt(value)
        return super().to_python(value)

    def get_prep_value(self, value: Any) -> Any:
        if isinstance(value, UndecryptableToken):
            return value.stored  # kept as it was
        value = super().get_prep_value(value)
        if not value:
            return value
        if value.startswith(PREFIX):
            return value  # already encrypted
        return encrypt(value)

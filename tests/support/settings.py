"""The settings every test runs with, on top of ``dashboard.settings``.

Passwords are hashed with MD5: the production hasher (PBKDF2, deliberately slow)
is not what the tests test, and every user a test makes would pay for it.  Child
processes (workers, gunicorn) keep the production settings; no test signs in
there with a password made in the test process.
"""

from __future__ import annotations

TEST_SETTINGS: dict[str, object] = {
    "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
}

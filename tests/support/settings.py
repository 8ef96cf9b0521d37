"""The settings every test runs with, on top of ``dashboard.settings``.

Passwords are hashed with MD5: the production hasher (PBKDF2, deliberately slow)
is not what the tests test, and every user a test makes would pay for it.  Child
processes (workers, gunicorn) keep the production settings; no test signs in
there with a password made in the test process.

WhiteNoise looks static files up when they are asked for (its ``AUTOREFRESH`` mode)
instead of listing every file of every app when its middleware is built: Django's test
client builds the middleware anew for each client, so each test that sent a request
paid for that listing (about 40 ms). The static files are served the same way; the
deployment tests run gunicorn with the production settings.
"""

from __future__ import annotations

TEST_SETTINGS: dict[str, object] = {
    "PASSWORD_HASHERS": ["django.contrib.auth.hashers.MD5PasswordHasher"],
    "WHITENOISE_AUTOREFRESH": True,
}

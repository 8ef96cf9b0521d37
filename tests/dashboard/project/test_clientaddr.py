"""TRUSTED_PROXIES: which address is the client's (dashboard.clientaddr)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings

from dashboard.clientaddr import client_address, parse_trusted_proxies

PROXIES = parse_trusted_proxies(["10.0.0.0/8", "fd00::/8"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        # a peer that is no trusted proxy is the client, whatever it forwards
        ("203.0.113.1", "198.51.100.2", "203.0.113.1"),
        # the right-most address not a trusted proxy; the forged left part is not read
        ("10.0.0.5", "6.6.6.6, 198.51.100.2", "198.51.100.2"),
        ("10.0.0.5", "198.51.100.2, 10.1.1.1, 10.2.2.2", "198.51.100.2"),
        # every forwarded address a proxy: the left-most one
        ("10.0.0.5", "10.9.9.9, 10.1.1.1", "10.9.9.9"),
        # nothing forwarded, or garbage: the last address known
        ("10.0.0.5", "", "10.0.0.5"),
        ("10.0.0.5", "198.51.100.2, not-an-address", "10.0.0.5"),
        # ports, brackets and IPv4 written as IPv6
        ("10.0.0.5", "198.51.100.2:4711", "198.51.100.2"),
        ("fd00::1", "[2001:db8::7]:443", "2001:db8::7"),
        ("::ffff:10.0.0.5", "198.51.100.2", "198.51.100.2"),
    ],
)
def test_the_client_is_the_right_most_untrusted_address(
    peer: str, forwarded: str, client: str
) -> None:
    assert client_address(peer, forwarded, PROXIES) == client


def test_a_bad_entry_is_named() -> None:
    with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES: 'ingress' is not an IP"):
        parse_trusted_proxies(["10.0.0.0/8", "ingress"])


@pytest.mark.django_db
def test_without_trusted_proxies_the_header_is_not_read() -> None:
    """The default (no TRUSTED_PROXIES): django-axes records the peer, not the header."""
    from axes.models import AccessAttempt

    body = {"username": "nobody", "password": "wrong"}
    for trusted, expected in (([], "10.0.0.5"), (["10.0.0.0/8"], "198.51.100.2")):
        AccessAttempt.objects.all().delete()
        with override_settings(TRUSTED_PROXIES=trusted):
            Client().post(
                "/api/auth/token/",
                body,
                REMOTE_ADDR="10.0.0.5",
                HTTP_X_FORWARDED_FOR="198.51.100.2",
            )
        assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == [expected]

"""Single sign-on in a real browser: Chromium signs in through a real OpenID provider
(oidc-provider on Node, tests/support/oidc_provider.py) as two users of different
groups, and each sees and may change its own queues only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import Browser
from django.conf import settings
from support.oidc_provider import Provider, dashboard_signs_in_with, start_provider, write_jwks
from support.tenants import make_tenants

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]


@pytest.fixture(scope="module")
def browser_idp(live_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    jwks = write_jwks(tmp_path_factory.mktemp("oidc-browser") / "jwks.json")
    with start_provider(jwks, [f"{live_server.url}/oidc/callback/"]) as provider:
        yield provider


@pytest.fixture
def sso(settings: Any, browser_idp: Provider, transactional_db: None) -> Iterator[None]:
    with dashboard_signs_in_with(settings, browser_idp.issuer, leeway_seconds=5):
        make_tenants(users=False)
        yield


def sign_in_with_provider(browser: Browser, login: str) -> None:
    # the provider's development sign-in page asks for a web font (no internet here) and
    # its own favicon (none): answered empty, so only the dashboard's errors count
    browser.page.route(
        "https://fonts.googleapis.com/**",
        lambda route: route.fulfill(status=200, body="", content_type="text/css"),
    )
    assert settings.OIDC is not None
    browser.page.route(
        f"{settings.OIDC.issuer}/favicon.ico",
        lambda route: route.fulfill(status=204, body=""),
    )
    browser.goto("/login/")
    browser.page.click("#sso-sign-in")
    browser.page.wait_for_selector("input[name=login]")
    browser.page.fill("input[name=login]", login)
    browser.page.fill("input[name=password]", "any-password")
    browser.page.click("button[type=submit]")
    browser.page.wait_for_selector("text=Your permissions")


def test_each_tenant_signs_in_and_sees_its_own_queues(sso: None, browser: Browser) -> None:
    sign_in_with_provider(browser, "alice")
    body = browser.page.inner_text("main")
    assert "You are alice in the groups team-a" in body
    assert "You administer root.a through adminacl of root.a, config v1." in body
    assert "root.b" not in body
    browser.goto("/queues/detail/?queue=root.a.x")
    assert browser.page.title() != "Not allowed"
    assert "root.a.x" in browser.page.inner_text("main")
    browser.expect_console_error("403")
    browser.goto("/queues/detail/?queue=root.b")
    assert "Not allowed" in browser.page.inner_text("main")
    browser.screenshot("sso-alice")
    # signing out ends the session: the pages ask for a sign-in again
    browser.page.click('[data-testid="logout"]')
    browser.goto("/access/")
    assert "/login/" in browser.page.url


def test_another_group_sees_the_other_tenant(sso: None, browser: Browser) -> None:
    sign_in_with_provider(browser, "bob")
    body = browser.page.inner_text("main")
    assert "You administer root.b through adminacl of root.b, config v1." in body
    assert "root.a" not in body
    browser.goto("/queues/detail/?queue=root.b")
    assert "root.b" in browser.page.inner_text("main")


def test_a_user_with_no_grant_is_told_so(sso: None, browser: Browser) -> None:
    sign_in_with_provider(browser, "mallory")
    assert "grant you nothing here" in browser.page.inner_text("main")
    browser.expect_console_error("403")
    browser.goto("/queues/")
    assert "Not allowed" in browser.page.inner_text("main")

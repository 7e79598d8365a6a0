"""Sign-in through an OpenID Connect provider running on loopback (README.md, "The chat page"): the code flow with
PKCE, a real RS256 id token, and its claims mapped to the ChatUser as a bearer token's are."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.pages.conftest import Site, shot, start_site
from tests.peers.oidc_provider import OIDCProvider

CLAIMS = {
    "sub": "grace-oidc",
    "email": "grace@example.com",
    "given_name": "Grace",
    "family_name": "Hopper",
    "user_type": "internal-user",
    "custom_data": {"team": "compilers"},
    "roles": ["navy"],
}


@pytest.fixture(scope="module")
def oidc_site(site: Site) -> Iterator[tuple[Site, OIDCProvider]]:
    """The platform with OIDC_* set, on the package's database, and its provider."""
    with OIDCProvider(client_id="chat-platform", client_secret="provider-secret") as provider, contextlib.ExitStack() as stack:
        yield start_site({**site.env, **provider.settings_env()}, site.model, stack, seed=False), provider


def test_a_person_signs_in_through_the_provider_and_their_claims_fill_their_profile(oidc_site, person_factory):
    site, provider = oidc_site
    provider.user = dict(CLAIMS)
    provider.audience = None
    visitor = person_factory(signed_in=False)
    page = visitor.page
    page.goto(f"{site.url}/chat/demo/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/chat/demo/"))
    page.get_by_role("link", name="Sign in with Test IdP").click()
    expect(page.get_by_role("heading", name="Test IdP")).to_be_visible()
    shot(page, "oidc-provider")
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(f"{site.url}/chat/demo/")
    expect(page.get_by_text("Grace Hopper")).to_be_visible()

    user = visitor.context.request.get(f"{site.url}/api/chat/user").json()["user"]
    assert {key: user[key] for key in ("userId", "email", "firstName", "lastName", "userType", "customData", "roles")} == {
        "userId": "grace-oidc",
        "email": "grace@example.com",
        "firstName": "Grace",
        "lastName": "Hopper",
        "userType": "internal-user",
        "customData": {"team": "compilers"},
        "roles": ["navy"],
    }
    token_request = provider.token_requests[-1]
    assert token_request["grant_type"] == "authorization_code" and token_request["code_verifier"], "PKCE"

    # The provider changes a claim: the next sign-in refreshes the profile, as a new token would.
    provider.user = {**CLAIMS, "family_name": "Murray Hopper"}
    page.get_by_role("button", name="Sign out").click()
    # Signing out ends the provider's session too (RP-initiated logout), which sends the person back to sign in.
    expect(page).to_have_url(f"{site.url}/accounts/login/")
    assert provider.ended_sessions[-1] == "grace-oidc"
    assert provider.logout_requests[-1]["post_logout_redirect_uri"] == f"{site.url}/accounts/login/"
    assert visitor.context.request.get(f"{site.url}/api/chat/user").status == 401
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(f"{site.url}/")
    assert visitor.context.request.get(f"{site.url}/api/chat/user").json()["user"]["lastName"] == "Murray Hopper"


def test_an_id_token_for_another_client_signs_nobody_in(oidc_site, person_factory):
    site, provider = oidc_site
    provider.user = dict(CLAIMS, sub="mallory-oidc")
    provider.audience = "another-client"
    page = person_factory(signed_in=False).page
    page.goto(f"{site.url}/accounts/login/")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/\?oidc=failed"))
    expect(page.get_by_role("alert")).to_contain_text("Sign-in with Test IdP did not succeed")
    shot(page, "oidc-refused")
    provider.audience = None

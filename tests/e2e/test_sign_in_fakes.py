"""The sign-in fakes against a client written by others: authlib's own OAuth 2.0 client (its
requests integration, run in a thread so the fakes keep their loop) completes the code flow
with PKCE against the fake OpenID provider and the fake GitHub, and the ID token passes
authlib's checks with the key from the fake's JWKS. And the fakes are strict: a flow missing
PKCE or the nonce, a wrong verifier, secret or redirect URI, or a code used twice is refused,
so a sign-in that passes against them did each of those right."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.fake_github import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, FakeGitHub
from tests.fake_idp import CLIENT_ID, CLIENT_SECRET, SLACK_TEAM_CLAIM, SLACK_USER_CLAIM, FakeIdP

CALLBACK = "http://127.0.0.1:9/login/oidc/callback"  # never reached: the test reads the redirect


def authlib_oidc(issuer: str) -> dict[str, Any]:
    """The whole code flow as authlib's client does it; the checked ID token's claims and the
    userinfo endpoint's answer."""
    doc = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=5).json()
    client = OAuth2Session(CLIENT_ID, CLIENT_SECRET, scope="openid email profile",
                           redirect_uri=CALLBACK, code_challenge_method="S256",
                           token_endpoint_auth_method="client_secret_basic")
    verifier, nonce = generate_token(48), generate_token(20)
    url, _ = client.create_authorization_url(doc["authorization_endpoint"], code_verifier=verifier,
                                             nonce=nonce)
    back = requests.get(url, allow_redirects=False, timeout=5).headers["Location"]
    token = client.fetch_token(doc["token_endpoint"], authorization_response=back,
                               code_verifier=verifier)
    keys = KeySet.import_key_set(requests.get(doc["jwks_uri"], timeout=5).json())
    decoded = jwt.decode(token["id_token"], keys, algorithms=["RS256"])
    claims = CodeIDToken(decoded.claims, decoded.header,
                         {"iss": {"essential": True, "value": issuer},
                          "aud": {"essential": True, "value": CLIENT_ID}},
                         {"nonce": nonce, "client_id": CLIENT_ID,
                          "access_token": token["access_token"]})
    claims.validate()
    info = client.get(doc["userinfo_endpoint"], timeout=5).json()
    return {"claims": dict(claims), "userinfo": info}


def authlib_github(web_url: str, api_url: str, callback: str) -> dict[str, Any]:
    client = OAuth2Session(OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, redirect_uri=callback,
                           code_challenge_method="S256",
                           token_endpoint_auth_method="client_secret_post")
    verifier = generate_token(48)
    url, _ = client.create_authorization_url(f"{web_url}/login/oauth/authorize",
                                             code_verifier=verifier)
    back = requests.get(url, allow_redirects=False, timeout=5).headers["Location"]
    client.fetch_token(f"{web_url}/login/oauth/access_token", authorization_response=back,
                       code_verifier=verifier)
    user: dict[str, Any] = client.get(f"{api_url}/user", timeout=5).json()
    return user


@pytest.mark.parametrize("slack", [False, True], ids=["org", "slack"])
async def test_authlib_signs_in_at_the_fake_provider(slack: bool) -> None:
    async with FakeIdP(slack=slack) as idp:
        idp.redirect_uris.add(CALLBACK)
        got = await asyncio.to_thread(authlib_oidc, idp.issuer)
    assert idp.refusals == []
    claims = got["claims"]
    assert (claims["iss"], claims["aud"], claims["email"], claims["email_verified"]) == (
        idp.issuer, CLIENT_ID, "Ada@Example.com", True)
    assert got["userinfo"]["sub"] == claims["sub"]
    if slack:
        assert (claims[SLACK_USER_CLAIM], claims[SLACK_TEAM_CLAIM]) == ("U0AYEADA1", "T0AYETEAM")


async def test_authlib_signs_in_at_the_fake_github() -> None:
    async with FakeGitHub() as github:
        github.oauth_redirect_uri = CALLBACK
        user = await asyncio.to_thread(authlib_github, github.web_url, github.api_url, CALLBACK)
    assert github.oauth_refusals == []
    assert (user["login"], user["type"]) == ("ada-l", "User")


# -- what the fake provider refuses -------------------------------------------------------------

CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"  # S256 of VERIFIER, as the RFC gives it
VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636 appendix B


async def authorize(http: aiohttp.ClientSession, idp: FakeIdP, **change: str) -> tuple[int, dict[str, str]]:
    query = {"response_type": "code", "client_id": CLIENT_ID, "redirect_uri": CALLBACK,
             "scope": "openid email", "state": "s1", "nonce": "n1", "code_challenge": CHALLENGE,
             "code_challenge_method": "S256", **change}
    query = {k: v for k, v in query.items() if v}
    async with http.get(idp.issuer + "/authorize", params=query, allow_redirects=False) as resp:
        back = {k: v[0] for k, v in parse_qs(urlsplit(resp.headers.get("Location", "")).query).items()}
        return resp.status, back


async def exchange(http: aiohttp.ClientSession, idp: FakeIdP, code: str, **change: str) -> int:
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": CALLBACK,
            "code_verifier": VERIFIER, "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            **change}
    async with http.post(idp.issuer + "/token", data=form) as resp:
        return resp.status


async def test_the_fake_provider_is_strict() -> None:
    async with FakeIdP() as idp, aiohttp.ClientSession() as http:
        idp.redirect_uris.add(CALLBACK)
        assert (await authorize(http, idp, client_id="someone"))[0] == 400
        assert (await authorize(http, idp, redirect_uri="http://evil.example/cb"))[0] == 400
        for change in ({"code_challenge_method": "plain"}, {"code_challenge": ""}, {"nonce": ""},
                       {"state": ""}, {"scope": "email"}):
            status, back = await authorize(http, idp, **change)
            assert (status, back.get("error")) == (302, "invalid_request"), change
        status, back = await authorize(http, idp)
        assert status == 302 and back["state"] == "s1"
        assert await exchange(http, idp, back["code"], code_verifier=VERIFIER[:-1] + "x") == 400
        status, back = await authorize(http, idp)
        assert await exchange(http, idp, back["code"], client_secret="wrong") == 401
        status, back = await authorize(http, idp)
        assert await exchange(http, idp, back["code"], redirect_uri=CALLBACK + "x") == 400
        status, back = await authorize(http, idp)
        assert await exchange(http, idp, back["code"]) == 200
        assert await exchange(http, idp, back["code"]) == 400  # a code is good once
        assert len(idp.refusals) == 11


async def test_the_fake_github_oauth_flow_is_strict() -> None:
    async with FakeGitHub() as github, aiohttp.ClientSession() as http:
        github.oauth_redirect_uri = CALLBACK
        query = {"client_id": OAUTH_CLIENT_ID, "redirect_uri": CALLBACK, "state": "s1",
                 "code_challenge": CHALLENGE, "code_challenge_method": "S256"}
        url = github.web_url + "/login/oauth/authorize"
        async with http.get(url, params={**query, "redirect_uri": CALLBACK + "x"},
                            allow_redirects=False) as resp:
            assert resp.status == 400
        async with http.get(url, params={**query, "code_challenge_method": "plain"},
                            allow_redirects=False) as resp:
            assert "error=invalid_request" in resp.headers["Location"]
        async with http.get(url, params=query, allow_redirects=False) as resp:
            code = parse_qs(urlsplit(resp.headers["Location"]).query)["code"][0]
        form = {"client_id": OAUTH_CLIENT_ID, "client_secret": OAUTH_CLIENT_SECRET, "code": code,
                "redirect_uri": CALLBACK, "code_verifier": VERIFIER[:-1] + "x"}
        token_url = github.web_url + "/login/oauth/access_token"
        async with http.post(token_url, data=form, headers={"Accept": "application/json"}) as resp:
            assert (resp.status, (await resp.json())["error"]) == (200, "bad_verification_code")
        # The code was spent by that try: the right verifier now gets nothing either.
        async with http.post(token_url, data={**form, "code_verifier": VERIFIER},
                             headers={"Accept": "application/json"}) as resp:
            assert "access_token" not in await resp.json()

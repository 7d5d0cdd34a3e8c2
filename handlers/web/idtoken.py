"""An OpenID Connect ID token, checked in full before anyone is signed in: its signature with a
key from the issuer's JWKS (joserfc, which authlib now builds on), then its claims with
authlib's `CodeIDToken`: `iss` is the issuer, `aud` holds aye's client id (and `azp` is aye
when there are other audiences), `exp` is not past, `iat` not ahead, `nonce` is this sign-in's,
and `at_hash`, when given, matches the access token.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from handlers.web.oauth import REFUSED, UNREACHABLE, Discovery, Refused
from handlers.web.providers import Provider

# authlib and joserfc (with cryptography, ~10 MB) are loaded at the first sign-in, not by
# every process: most never have one.
if TYPE_CHECKING:
    from joserfc import jwt
    from joserfc.jwk import KeySet

# Clocks differ a little between aye and the provider; not more than this.
LEEWAY_S = 60
# Asymmetric signatures only: an HS256 token would be "signed" with the client secret, and
# "none" is no signature at all.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
              "EdDSA")
# A JWKS is asked for again when a token names a key it does not hold (the provider rotated
# its keys), but not more often than this.
REFETCH_S = 60.0
KEYS_TTL_S = 3600.0  # as long as the discovery document is kept


class Keys:
    """Each issuer's JWKS, fetched when first needed and again when a key is not found."""

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery
        self._sets: dict[str, tuple[float, KeySet]] = {}

    async def of(self, issuer: str, fresh: bool = False) -> KeySet:
        kept = self._sets.get(issuer)
        # Read again for a key not found (at most every REFETCH_S), and in any case once the
        # set is KEYS_TTL_S old: a key the provider withdrew is trusted no longer than that.
        if kept is not None:
            age = time.monotonic() - kept[0]
            if age < KEYS_TTL_S and not (fresh and age > REFETCH_S):
                return kept[1]
        from joserfc.errors import JoseError
        from joserfc.jwk import KeySet

        doc = await self.discovery.of(issuer)
        status, jwks = await self.discovery.http.json("GET", doc["jwks_uri"], "jwks")
        if status != 200 or not isinstance(jwks, dict):
            raise Refused(UNREACHABLE, f"jwks: status {status}")
        try:
            found = KeySet.import_key_set(jwks)  # type: ignore[arg-type]
        except (JoseError, ValueError, TypeError, KeyError):
            raise Refused(REFUSED, "jwks: unreadable") from None
        self._sets[issuer] = (time.monotonic(), found)
        return found


async def check(keys: Keys, provider: Provider, token: dict[str, Any], nonce: str,
                now: float) -> dict[str, Any]:
    """The ID token's claims, once every check passed; Refused naming the first that failed."""
    from authlib.oidc.core import CodeIDToken
    from joserfc.errors import JoseError

    assert provider.issuer is not None
    raw = token.get("id_token")
    if not isinstance(raw, str):
        raise Refused(REFUSED, "no id_token")
    doc = await keys.discovery.of(provider.issuer)
    offered = doc.get("id_token_signing_alg_values_supported")
    algorithms = [a for a in (offered if isinstance(offered, list) else ["RS256"]) if a in ALGORITHMS]
    if not algorithms:  # never let an empty list mean the library's defaults
        raise Refused(REFUSED, "id_token: the provider signs with no algorithm aye takes")
    decoded = await _verified(keys, provider.issuer, raw, algorithms)
    # `iss` as the provider's own discovery document spells it (it matched the configured
    # issuer, a trailing slash aside): some providers' issuers end in "/".
    said = doc.get("issuer")
    options = {
        "iss": {"essential": True, "value": said if isinstance(said, str) else provider.issuer},
        "aud": {"essential": True, "value": provider.client.id},
    }
    params = {"nonce": nonce, "client_id": provider.client.id, "access_token": token["access_token"]}
    claims = CodeIDToken(decoded.claims, decoded.header, options, params)
    try:
        claims.validate(now=int(now), leeway=LEEWAY_S)
    except JoseError as exc:
        raise Refused(REFUSED, f"id_token: {exc.__class__.__name__} {getattr(exc, 'claim', '')}") from None
    return dict(claims)


async def _verified(keys: Keys, issuer: str, raw: str, algorithms: list[str]) -> jwt.Token:
    """The token, its signature checked with the issuer's key (asked again once when the key
    it names is not known yet)."""
    from joserfc import jwt
    from joserfc.errors import InvalidKeyIdError, JoseError

    for fresh in (False, True):
        key_set = await keys.of(issuer, fresh)
        try:
            return jwt.decode(raw, key_set, algorithms=algorithms)
        except InvalidKeyIdError:
            continue
        except (JoseError, ValueError) as exc:
            raise Refused(REFUSED, f"id_token signature: {exc.__class__.__name__}") from None
    raise Refused(REFUSED, "id_token signature: no such key")

"""Signatures on the agent's side (re-exported by aye_client).

`sign_external` signs a payload for an external ask's door the way a verifier expects (for
whoever writes the outside system's side, and for tests). `verify_callback` checks a callback
from aye: aye POSTs `{"event": "ask.closed", "ask": {…}}` to an ask's `callback_url`, signed
`X-Aye-Signature-256: sha256=<hex HMAC-SHA256 of the exact body>` with the agent's callback
secret, and names the delivery in `X-Aye-Delivery` (the same on every retry)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any

from aye_client.verifiers import SCHEMES, Verifier

SIGNATURE_HEADER = "X-Aye-Signature-256"
DELIVERY_HEADER = "X-Aye-Delivery"
EVENT_HEADER = "X-Aye-Event"
PREFIX = "sha256="


class BadSignature(ValueError):
    """The body is not a callback signed with this secret: answer it 401 and use none of it."""


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, whatever its case (a plain dict, aiohttp's headers, or
    http.server's `self.headers` alike)."""
    found = headers.get(name)
    if found is not None:
        return found
    wanted = name.lower()
    return next((value for key, value in headers.items() if key.lower() == wanted), None)


def verify_callback(
    body: bytes, headers: Mapping[str, str], secret: str | bytes
) -> dict[str, Any]:
    """The callback's payload (`{"event": "ask.closed", "ask": {…}}`) once its signature is
    checked against `secret` (the value of the agent's `callback_secret_env`), compared in
    constant time; BadSignature otherwise. `body` is the request's exact bytes, as read."""
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if not key:
        raise ValueError("verify_callback needs the agent's callback secret, not an empty one")
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError("verify_callback takes the body's exact bytes, as received")
    given = header(headers, SIGNATURE_HEADER)
    if not given:
        raise BadSignature(f"no {SIGNATURE_HEADER} header: not a callback from aye")
    expected = PREFIX + hmac.new(key, bytes(body), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), given.strip().encode("utf-8", "replace")):
        raise BadSignature(f"{SIGNATURE_HEADER} does not match the body and this secret")
    try:
        payload = json.loads(bytes(body))
    except ValueError:
        raise BadSignature("the signed body is not JSON") from None
    if not isinstance(payload, dict):
        raise BadSignature("the signed body is not a JSON object")
    return payload


def sign_external(
    body: bytes, secret: str | bytes, *, header: str = "X-Signature-256",
    scheme: str = "hmac-sha256", timestamp_header: str | None = None,
    timestamp: int | None = None,
) -> dict[str, str]:
    """The headers that make `body` (the exact bytes to POST to an ask's `answer_url`) pass
    the verifier configured with this `secret`, `header`, `scheme` and `timestamp_header`:
    `{"X-Signature-256": "sha256=<hex HMAC-SHA256 of the body>"}`, or with a timestamp header,
    that header holding Unix seconds (now, unless `timestamp` is given) and the HMAC over
    `<timestamp>.<body>`."""
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    if not key:
        raise ValueError("sign_external needs the verifier's secret, not an empty one")
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError("sign_external signs the body's exact bytes")
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}: one of {', '.join(sorted(SCHEMES))}")
    verifier = Verifier("", key, header, SCHEMES[scheme], timestamp_header)
    return verifier.sign(bytes(body), timestamp)


RECEIPT_TYP = "aye-receipt+jwt"


class BadReceipt(ValueError):
    """Not a receipt aye signed with one of these keys (or one byte of it was changed)."""


def verify_receipt(
    receipt: str, keys: Mapping[str, Any] | Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The receipt's payload once its signature checks against `keys` (the JWKS from
    `GET /v1/keys`, or its list of keys); BadReceipt otherwise. An approval's `exp` says until
    when its grant could be used; a receipt stays proof after it, so `exp` is not enforced."""
    import jwt  # PyJWT: only for receipts

    listed = keys.get("keys", []) if isinstance(keys, Mapping) else keys
    try:
        header = jwt.get_unverified_header(receipt)
    except jwt.PyJWTError as exc:
        raise BadReceipt(f"not a compact JWS: {exc}") from None
    if header.get("typ") != RECEIPT_TYP or header.get("alg") != "EdDSA":
        raise BadReceipt(f"not an aye receipt (typ {header.get('typ')!r}, "
                         f"alg {header.get('alg')!r})")
    found = next((k for k in listed if k.get("kid") == header.get("kid")), None)
    if found is None:
        raise BadReceipt(f"no key {header.get('kid')!r} among these keys (GET /v1/keys)")
    try:
        key = jwt.PyJWK(dict(found), algorithm="EdDSA").key
        return dict(jwt.decode(receipt, key, algorithms=["EdDSA"], options={
            "verify_exp": False, "require": ["iss", "sub", "iat"]}))
    except jwt.PyJWTError as exc:
        raise BadReceipt(f"the receipt does not verify: {exc}") from None

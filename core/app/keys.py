"""The key receipts are signed with (Ed25519, through cryptography and PyJWT), and the public
keys that verify them (`GET /v1/keys`, a JWKS).

The key is the file's at AYE_SIGNING_KEY_PATH, or one generated at first start and kept in the
store, so that every process on one PostgreSQL signs with it. Each key's public half stays in
the store for good: a receipt signed before `aye keys rotate`, or before the file's key took
over, still verifies. A process re-reads the current key every REFRESH_S, so a rotation reaches
every process within that; the JWKS is read from the store on every request, so it already
holds any key a process signs with."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.domain.logline import emit
from core.domain.receipts import ALG, TYP
from store import keys as q
from store.db import Duplicate, Store, StoreError

# cryptography and PyJWT (~9 MB) are loaded when a key is first made or used: a process that
# restarts on a store with its key signs nothing until an approval is decided.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

log = logging.getLogger("aye.keys")

REFRESH_S = 5.0
TRIES = 5


class SigningKeyError(StoreError):
    """The signing key cannot be used as configured (the store's keys, or the file's): the
    message is for the operator, and `aye serve` exits 2 with it."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    kid: str
    private: Ed25519PrivateKey = field(repr=False)
    jwk: dict[str, Any]

    @classmethod
    def of(cls, private: Ed25519PrivateKey) -> SigningKey:
        from cryptography.hazmat.primitives import serialization

        raw = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        x = _b64(raw)
        # RFC 7638: the key's thumbprint names it, the same on every process.
        kid = _b64(hashlib.sha256(json.dumps(
            {"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"),
            sort_keys=True).encode()).digest())
        jwk = {"kty": "OKP", "crv": "Ed25519", "x": x, "alg": ALG, "use": "sig", "kid": kid}
        return cls(kid, private, jwk)

    def pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode()

    def sign(self, claims: dict[str, Any]) -> str:
        import jwt

        return jwt.encode(claims, self.private, algorithm=ALG,
                          headers={"typ": TYP, "kid": self.kid})


def from_file(path: str) -> SigningKey:
    """The Ed25519 private key (PEM) at `path`; SigningKeyError saying why not."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SigningKeyError(f"AYE_SIGNING_KEY_PATH: cannot read {path}: {exc.strerror}") from None
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"AYE_SIGNING_KEY_PATH: {path} is not an unencrypted PEM private key "
                        f"({type(exc).__name__})") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise SigningKeyError(f"AYE_SIGNING_KEY_PATH: {path} holds a {type(private).__name__}, "
                        "not an Ed25519 key (openssl genpkey -algorithm ed25519)")
    return SigningKey.of(private)


def _from_row(row: dict[str, Any]) -> SigningKey | None:
    pem = row.get("private_pem")
    if not pem:
        return None
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    return SigningKey.of(private)


def _generate() -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.generate()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Keyring:
    """This process's signing key, and the store's public keys."""

    def __init__(self, store: Store, path: str | None = None, issuer: str | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self.store, self.path, self.now = store, path, now
        # Receipts' `iss`: where aye is reached (AYE_PUBLIC_URL), or `aye`.
        self.issuer = (issuer or "").rstrip("/") or "aye"
        self._key: SigningKey | None = None
        self._read_at = float("-inf")

    async def start(self) -> str:
        """Load or make the key (the store is open): its start-up line. SigningKeyError when the
        file's key cannot be used."""
        if self.path:
            key = from_file(self.path)
            row = await q.current(self.store)
            if row is None or row["kid"] != key.kid:
                await self._make_current(key, None)
            self._key = key
            return f"receipts: signed with the key in {self.path} (kid {key.kid[:12]}…)"
        row = await q.current(self.store)
        if row is not None and row.get("private_pem"):
            # Kept in the store: read in full (its private half parsed) when first signing.
            return f"receipts: signed with a key kept in the store (kid {row['kid'][:12]}…)"
        key, made = await self._stored()
        return (f"receipts: signed with a key {'generated at this start' if made else 'kept'}"
                f" in the store (kid {key.kid[:12]}…)")

    async def signer(self) -> SigningKey:
        """The current key (a file's, or the store's, re-read every REFRESH_S)."""
        if self.path and self._key is not None:
            return self._key
        if self._key is None or time.monotonic() - self._read_at > REFRESH_S:
            self._key, _ = await self._stored()
        return self._key

    async def sign(self, claims: dict[str, Any]) -> str:
        return (await self.signer()).sign(claims)

    async def jwks(self) -> dict[str, Any]:
        return {"keys": await q.public_keys(self.store)}

    async def rotate(self) -> SigningKey:
        """A new current key; the earlier ones stay in the JWKS."""
        if self.path:
            raise SigningKeyError("AYE_SIGNING_KEY_PATH is set: aye signs with that file's key; "
                            "put a new key in the file (or unset it) instead of rotating")
        key = SigningKey.of(_generate())
        await self._make_current(key, key.pem())
        emit(log, "keys.rotated", kid=key.kid)
        return key

    async def _stored(self) -> tuple[SigningKey, bool]:
        """The store's current key, made at first start (or when the current one's private
        half is in a file this process does not have): the key, and whether it was made."""
        for _ in range(TRIES):
            row = await q.current(self.store)
            key = _from_row(row) if row is not None else None
            if key is not None:
                self._read_at = time.monotonic()
                return key, False
            made = SigningKey.of(_generate())
            if row is None:
                if await q.first(self.store, made.kid, made.jwk, made.pem(), self.now()):
                    self._read_at = time.monotonic()
                    emit(log, "keys.generated", kid=made.kid)
                    return made, True
                continue  # another process's key came first: read it
            try:
                await q.make_current(self.store, made.kid, made.jwk, made.pem(), self.now())
            except Duplicate:
                continue
            self._read_at = time.monotonic()
            emit(log, "keys.generated", kid=made.kid, why="the current key is in a file")
            return made, True
        raise SigningKeyError("could not agree on a signing key with the other processes")

    async def _make_current(self, key: SigningKey, pem: str | None) -> None:
        for _ in range(TRIES):
            try:
                await q.make_current(self.store, key.kid, key.jwk, pem, self.now())
                return
            except Duplicate:
                continue
        raise SigningKeyError("could not make the signing key current beside the other processes")

"""The generated tokens' hashes (meta, `token_sha256:<kind>`): kept once, never a token in clear.

The first process to keep a kind's hash decides it for every process on the store: the meta
table's primary key lets one insert win, and the loser's transaction is over (Duplicate)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from store.db import Duplicate, Store
from store.models import MetaRow

META = MetaRow.__table__  # type: ignore[attr-defined]
M = META.c
KEY = "token_sha256:{kind}"


async def token_hashes(store: Store, kinds: list[str]) -> dict[str, str]:
    """The kept hash of each of `kinds` that has one."""
    keys = {KEY.format(kind=kind): kind for kind in kinds}
    async with store.read() as conn:
        rows = (await conn.execute(select(M.key, M.value).where(M.key.in_(keys)))).all()
    return {keys[key]: value for key, value in rows}


async def keep_token_hashes(store: Store, hashes: Mapping[str, str]) -> None:
    """Keep the hash of each kind not kept yet, all in one transaction (in the order given, the
    same in every process, so two racing ones never each win a part). Duplicate when another
    process kept one of them first: read them again with token_hashes."""
    try:
        async with store.write() as conn:
            kept = {key for (key,) in (await conn.execute(select(M.key).where(
                M.key.in_([KEY.format(kind=kind) for kind in hashes])))).all()}
            for kind, value in hashes.items():
                if KEY.format(kind=kind) not in kept:
                    await conn.execute(META.insert().values(key=KEY.format(kind=kind), value=value))
    except IntegrityError as exc:
        raise Duplicate from exc

"""`aye keys rotate`: a new current key to sign receipts with, made in the store itself
(AYE_DATABASE_URL), as a generated key is kept there. The earlier public keys stay in
`GET /v1/keys`, so receipts signed before still verify; running servers sign with the new key
within core.app.keys.REFRESH_S. With AYE_SIGNING_KEY_PATH set, aye signs with that file's key:
rotating is then a new key in the file, and this refuses (exit 2)."""

from __future__ import annotations

import asyncio
import sys

from bot.settings import Settings, SettingsError

EXIT_OK, EXIT_USAGE = 0, 2


def cmd_rotate() -> int:
    from core.app.keys import REFRESH_S, Keyring  # the store's engines and cryptography
    from store.db import Store, StoreError

    try:
        settings = Settings.from_env()
        store = Store(settings.database_url, settings.listen_url)
    except (SettingsError, StoreError) as exc:
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if settings.signing_key_path:
        print("aye: AYE_SIGNING_KEY_PATH is set: aye signs with that file's key; put a new key "
              "in the file (or unset it) instead of rotating", file=sys.stderr)
        return EXIT_USAGE
    keys = Keyring(store)

    async def rotate() -> str:
        try:
            await store.open()
            return (await keys.rotate()).kid
        finally:
            await store.close()

    try:
        kid = asyncio.run(rotate())
    except StoreError as exc:  # unreachable, or a SQLite file aye serve has open
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"new current key {kid}: receipts are signed with it within {REFRESH_S:.0f} s on "
          "every process; the earlier keys stay in GET /v1/keys")
    return EXIT_OK

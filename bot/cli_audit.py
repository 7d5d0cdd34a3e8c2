"""`aye audit export [--after SEQ]`: the audit chain as JSON lines, read from the aye at AYE_URL
with the operator token (`GET /v1/audit`); `aye audit verify`: the chain recomputed from the
store itself (AYE_DATABASE_URL), every hash and link, naming the first entry that does not
match (exit 1), or `ok: N entries, head <hash>` (exit 0)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from bot.settings import Settings, SettingsError

EXIT_OK, EXIT_BROKEN, EXIT_USAGE = 0, 1, 2
PAGE = 1000


def cmd_export(client: Any, after: int, failed: Callable[[int, Any], int]) -> int:
    """Every entry after seq `after`, one JSON object a line, in order."""
    while True:
        status, body = client.request("GET", f"/v1/audit?after={after}&limit={PAGE}")
        if status != 200:
            return failed(status, body)
        for entry in body["entries"]:
            sys.stdout.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        if body.get("next") is None:
            return EXIT_OK
        after = int(body["next"])


def cmd_verify() -> int:
    """Walk the chain in the store: ok, or the first entry that does not match."""
    from core.app import auditing  # the store's engines: only for this command
    from store.db import Store, StoreError

    try:
        store = Store(Settings.from_env().database_url)
    except (SettingsError, StoreError) as exc:
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def walk() -> Any:
        try:
            return await auditing.verify(store)
        finally:
            await store.close()

    try:
        checked = asyncio.run(walk())
    except Exception as exc:  # a store that cannot be read: say what, never a traceback
        print(f"aye: cannot read the audit chain from {store.describe()}: "
              f"{exc.__class__.__name__}", file=sys.stderr)
        return EXIT_USAGE
    if checked.broken_at is None:
        print(f"ok: {checked.count} entries, head {checked.head}")
        return EXIT_OK
    print(f"broken at entry {checked.broken_at}: {checked.why} "
          f"({checked.count} entries before it match)")
    return EXIT_BROKEN

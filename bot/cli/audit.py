"""`aye audit export [--after SEQ]`: the audit chain as JSON lines, read from the aye at AYE_URL
with the operator token (`GET /v1/audit`); `aye audit verify [--head FILE]`: the chain
recomputed from the store itself (AYE_DATABASE_URL), every hash and link, held to a head saved
earlier (`GET /v1/audit/head`, or the log's `audit.head` line), and every ask's row held to its
replayed history. It names the first entry that does not match, a saved head the chain no
longer holds, and each ask whose row contradicts its history (exit 1), or prints `ok: N
entries, head <hash>` (exit 0). A head file that is not a head, or no store, is exit 2."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.settings import Settings, SettingsError

EXIT_OK, EXIT_BROKEN, EXIT_USAGE = 0, 1, 2
PAGE = 1000
MAX_ASKS_SAID = 20


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


def cmd_verify(head_file: str | None = None) -> int:
    """Walk the chain in the store, hold it to a head saved earlier (`head_file`) and every
    ask's row to its history: ok, or each thing that does not hold."""
    from core.app import auditing  # the store's engines: only for this command
    from store.db import Store, StoreError

    try:
        settings = Settings.from_env()
        url = settings.database_url
        missing = _no_store(url)
        store = None if missing else Store(url, settings.listen_url)
    except (SettingsError, StoreError) as exc:
        print(f"aye: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if store is None:
        print(f"aye: {missing}", file=sys.stderr)
        return EXIT_USAGE
    saved = _read(head_file) if head_file else None
    if isinstance(saved, int):
        return saved

    async def check() -> Any:
        try:
            held = None if saved is None else auditing.saved_head(
                saved, await public_keys(store))
            return await auditing.report(store, held)
        finally:
            await store.close()

    try:
        verified = asyncio.run(check())
    except auditing.UnusableHead as exc:
        print(f"aye: --head {head_file}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except auditing.ForgedHead as exc:
        print(f"the saved head {head_file} is not this aye's: {exc}")
        return EXIT_BROKEN
    except Exception as exc:  # a store that cannot be read: say what, never a traceback
        print(f"aye: cannot read the audit chain from {store.describe()}: "
              f"{exc.__class__.__name__}", file=sys.stderr)
        return EXIT_USAGE
    return _said(verified)


async def public_keys(store: Any) -> list[dict[str, Any]]:
    from store import keys

    return await keys.public_keys(store)


def _no_store(url: str) -> str | None:
    """Why there is no store to verify at `url` (a SQLite file that does not exist): one
    line saying where to point; None when there may be one. Nothing is created here."""
    from store.urls import sqlite_path

    path = sqlite_path(url)
    # An empty file: what `aye audit verify` left behind here before 0.5 (it holds no store).
    if path is None or (path.exists() and path.stat().st_size > 0):
        return None
    return (f"no aye store at {path.absolute()}: run this in the folder aye serve keeps its "
            "store in, or set AYE_DATABASE_URL to it (sqlite:///path/to/aye.db, "
            "postgresql://…)")


def _read(path: str) -> str | int:
    """The text of the head file at `path`, or the exit status after saying why not."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        print(f"aye: --head {path}: cannot read it ({exc.strerror})", file=sys.stderr)
        return EXIT_USAGE


def _said(verified: Any) -> int:
    """Print what `aye audit verify` found: its exit status."""
    checked = verified.checked
    if verified.ok:
        print(f"ok: {checked.count} entries, head {checked.head}")
        return EXIT_OK
    if checked.broken_at is not None:
        print(f"broken at entry {checked.broken_at}: {checked.why} "
              f"({checked.count} entries before it match)")
    if verified.head is not None:
        print(f"the saved head does not hold: {verified.head}")
    for line in verified.asks[:MAX_ASKS_SAID]:
        print(f"ask {line}")
    if len(verified.asks) > MAX_ASKS_SAID:
        print(f"… and {len(verified.asks) - MAX_ASKS_SAID} more asks whose rows contradict "
              "their history")
    return EXIT_BROKEN

"""aye_client as a distribution of its own (clients/python): what it declares, what importing it
pulls in, and the old import path (`ask_api.client`) that still works through 0.5, warning once."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "python"
# What an agent that installs only aye-client must not get: aye's server, nor its dependencies.
SERVER = {"ask_api", "bot", "core", "store", "handlers", "slack_sdk", "slack_bolt", "sqlalchemy",
          "sqlmodel", "textual", "gidgethub", "asyncpg", "alembic", "mcp", "pydantic"}


def project(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))["project"]


def test_the_client_needs_only_aiohttp_and_pyjwt() -> None:
    client = project(CLIENT / "pyproject.toml")
    assert client["name"] == "aye-client"
    assert [d.split(">")[0] for d in client["dependencies"]] == ["aiohttp", "pyjwt[crypto]"]
    assert set(client["optional-dependencies"]) == {"openai-agents", "langchain", "claude"}


def test_the_server_brings_the_client_and_what_it_needs() -> None:
    # The server's install makes aye_client importable, so it must carry the client's own
    # dependencies, at the client's floors or above.
    server = project(ROOT / "pyproject.toml")["dependencies"]
    for needed in project(CLIENT / "pyproject.toml")["dependencies"]:
        assert needed in server, f"the server's dependencies lack the client's {needed}"


def test_importing_the_client_pulls_in_nothing_of_the_server(tmp_path: Path) -> None:
    # A fresh interpreter, away from the checkout: what `import aye_client` loads, and where from.
    code = ("import sys, json, aye_client; "
            "print(json.dumps([sorted(sys.modules), aye_client.__file__]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True, timeout=60)
    modules, where = json.loads(out.stdout)
    loaded = {m.partition(".")[0] for m in modules}
    assert "aye_client" in loaded and "aiohttp" in loaded
    assert not loaded & SERVER, f"import aye_client loaded {sorted(loaded & SERVER)}"
    assert Path(where).parent == CLIENT / "aye_client"


def test_the_old_import_path_works_and_warns_once() -> None:
    import aye_client

    sys.modules.pop("ask_api.client", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module("ask_api.client")
        again = importlib.import_module("ask_api.client")
    said = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(said) == 1 and "aye_client" in str(said[0].message)
    assert again is old
    for name in aye_client.__all__:
        assert getattr(old, name) is getattr(aye_client, name), name
    assert {"connect", "AyeClient", "verify_receipt", "verify_callback", "ApprovalRefused",
            "AskClosed", "StartRefused", "BadReceipt", "sign_external"} <= set(old.__all__)

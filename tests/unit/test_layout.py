"""The house rules of the source tree, read with `ast` (nothing is imported): what each room may
import (allow-lists), no circle of files inside a room, and how long a file or a function may
grow. Each rule is also shown to fail on a planted violation of its kind."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "core", "store", "handlers", "ask_api")
# The Python client, aye_client: a distribution of its own (`aye-client`) in clients/python,
# importing nothing of aye's server, so an agent installs it without the server's dependencies.
CLIENT_ROOT = ROOT / "clients" / "python"
CLIENT = "aye_client"
FOLDERS = (*PACKAGES, "clients/python/aye_client")
AYE = frozenset((*PACKAGES, CLIENT))
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 50
# What the client may import besides the standard library and itself: its two dependencies
# (aiohttp, PyJWT) and the runtimes its extras install, each for its own adapter module.
CLIENT_LIBRARIES = ("aiohttp", "jwt", "agents", "langchain", "langchain_core", "langgraph",
                    "claude_agent_sdk")
# What an adapter (a surface, the API) may import of the core: its one façade, what it offers
# and needs (ports), and the pure domain.
CORE_FOR_ADAPTERS = ("core.app.service", "core.app.ports", "core.domain")
# What every surface may use: its environment, retries, and the kit of page pieces (what an ask
# shows, its form's fields, the headers and bounded form reader) that the inbox and email's
# page share, so that no surface imports another.
SHARED_HANDLERS = ("handlers.env", "handlers.retry", "handlers.kit")
# Pure computation: validation (jsonschema, its referencing, regex for bounded patterns) and
# RFC 8785 for the canonical identity of a call (core/domain/identity.py).
DOMAIN_LIBRARIES = ("pydantic", "jsonschema", "referencing", "regex", "rfc8785")


@dataclass(frozen=True, slots=True)
class Import:
    path: Path
    line: int
    target: str  # `a.b` for `import a.b`; `a.b.c` for `from a.b import c`
    top_level: bool = True  # at module level (a TYPE_CHECKING block counts), not in a function

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.target}"


def sources(*folders: str) -> list[Path]:
    return sorted(
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts
    )


def module_of(path: Path) -> str:
    root = CLIENT_ROOT if path.is_relative_to(CLIENT_ROOT) else ROOT
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, source: str | None = None) -> Iterator[Import]:
    """Every import in the file (or in `source`, read as that file), wherever it is
    (TYPE_CHECKING blocks and functions too), with relative imports made absolute."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    package = module_of(path) if path.name == "__init__.py" else module_of(path).rpartition(".")[0]
    in_functions = {
        id(node) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(fn)
    }
    for node in ast.walk(tree):
        top = id(node) not in in_functions
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name, top)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Import(path, node.lineno, f"{base}.{alias.name}", top)


def under(target: str, *modules: str) -> bool:
    return any(target == m or target.startswith(m + ".") for m in modules)


def is_aye(target: str) -> bool:
    return target.partition(".")[0] in AYE


def is_library(target: str) -> bool:
    """The standard library or a third-party package: anything not aye's own."""
    return not is_aye(target)


# -- the rooms' allow-lists -------------------------------------------------------------------
# Each takes an import and says whether the room it is in may make it.


def domain_may(imp: Import) -> bool:
    top = imp.target.partition(".")[0]
    return top in sys.stdlib_module_names or top in DOMAIN_LIBRARIES or under(imp.target, "core.domain")


def app_may(imp: Import) -> bool:
    return is_library(imp.target) or under(imp.target, "core.domain", "core.app", "store")


def store_may(imp: Import) -> bool:
    return is_library(imp.target) or under(imp.target, "store")


def surface_may(own: str) -> Callable[[Import], bool]:
    def may(imp: Import) -> bool:
        return is_library(imp.target) or under(imp.target, *CORE_FOR_ADAPTERS, own,
                                               *SHARED_HANDLERS)
    return may


def api_may(imp: Import) -> bool:
    return is_library(imp.target) or under(imp.target, *CORE_FOR_ADAPTERS, "ask_api", CLIENT)


def client_may(imp: Import) -> bool:
    top = imp.target.partition(".")[0]
    return top in sys.stdlib_module_names or top in CLIENT_LIBRARIES or under(imp.target, CLIENT)


def bot_may(imp: Import) -> bool:
    return True  # the process: the only room that imports all the others


def room_of(path: Path) -> tuple[str, Callable[[Import], bool]]:
    """The room a source file is in, and its allow-list."""
    module = module_of(path)
    if under(module, "core.domain"):
        return "core.domain", domain_may
    if under(module, "core.app"):
        return "core.app", app_may
    if under(module, "store"):
        return "store", store_may
    if under(module, CLIENT):
        return "the client", client_may
    if under(module, "ask_api"):
        return "ask_api", api_may
    if under(module, *SHARED_HANDLERS) or module == "handlers":
        return "handlers", surface_may("handlers.__none__")
    if under(module, "handlers"):
        surface = ".".join(module.split(".")[:2])
        return surface, surface_may(surface)
    if under(module, "bot"):
        return "bot", bot_may
    if module == "core":
        return "core", domain_may
    raise AssertionError(f"{path} is in no room")


def violations(paths: list[Path], sources_: dict[Path, str] | None = None) -> list[str]:
    found = []
    for path in paths:
        _, may = room_of(path)
        text = (sources_ or {}).get(path)
        found += [str(i) for i in imports(path, text) if not may(i)]
    return found


def show(found: list[str]) -> str:
    return "\n" + "\n".join(found)


def test_every_room_imports_only_what_its_allow_list_names() -> None:
    found = violations(sources(*FOLDERS))
    assert not found, (
        "an import its room may not make (see README, \"How aye is built\"):" + show(found)
    )


def test_every_source_file_is_in_a_room() -> None:
    rooms = {room_of(p)[0] for p in sources(*FOLDERS)}
    assert {"core.domain", "core.app", "store", "ask_api", "the client", "bot",
            "handlers.slack", "handlers.github", "handlers.web"} <= rooms


def store_imports(paths: list[Path], sources_: dict[Path, str] | None = None) -> list[str]:
    """Imports of the store, wherever they are in the file (functions, TYPE_CHECKING)."""
    return [str(i) for p in paths for i in imports(p, (sources_ or {}).get(p))
            if under(i.target, "store")]


def test_no_surface_imports_the_store() -> None:
    # A surface reaches the store through the core's service and ports, never directly.
    found = store_imports(sources("handlers"))
    assert not found, "surfaces importing the store:" + show(found)
    planted = ROOT / "handlers/email/planted.py"
    assert store_imports([planted], {planted: "def f():\n    from store import mails\n"})


GUARDED_STORE = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from store.db import Store\n"
# A planted violation of each kind, read as the file it names: each must be refused.
PLANTED = [
    ("core/domain/planted.py", "import asyncio.subprocess\nfrom store import asks"),
    ("core/domain/planted.py", "from core.app.service import Service"),
    ("core/domain/planted.py", "import sqlalchemy"),
    ("core/app/planted.py", "from handlers.slack import surface"),
    ("core/app/planted.py", "from ask_api.views import ask_view"),
    ("core/app/planted.py", "from bot.app import create_app"),
    ("store/planted.py", "from core.domain import rules"),
    ("handlers/slack/planted.py", "from store.models import AskRow"),
    ("handlers/slack/planted.py", "from core.app.reading import find"),
    ("handlers/slack/planted.py", "from handlers.github import surface"),
    ("handlers/slack/planted.py", "from bot.loops import Deliverer"),
    ("handlers/slack/planted.py", "from ask_api.routes import AskApi"),
    ("handlers/slack/planted.py", GUARDED_STORE),
    ("handlers/slack/planted.py", "from handlers.web.views import card"),
    ("handlers/email/planted.py", "from handlers.web.pages import Inbox"),
    ("handlers/email/planted.py", "from handlers.web.guard import guard"),
    ("handlers/kit/planted.py", "from handlers.web.pages import Inbox"),
    ("handlers/web/planted.py", "def f():\n    from bot.run import run"),
    ("ask_api/planted.py", "from store.db import Store"),
    ("ask_api/planted.py", "from core.app.change import Changes"),
    ("ask_api/planted.py", "from handlers.web import setup"),
    ("ask_api/planted.py", "from bot.connections import BodyTimeout"),
    ("ask_api/planted.py", "import bot.__main__"),
    ("clients/python/aye_client/client.py", "from ask_api.views import ask_view"),
    ("clients/python/aye_client/errors.py", "from core.domain import rules"),
    ("clients/python/aye_client/planted.py", "def f():\n    from bot.cli import main"),
    ("clients/python/aye_client/planted.py", "import sqlalchemy"),
    ("clients/python/aye_client/planted.py", "from slack_sdk import WebClient"),
    ("core/domain/planted.py", "from aye_client.verifiers import Verifier"),
    ("store/planted.py", "from aye_client import connect"),
    ("handlers/slack/planted.py", "from aye_client import connect"),
]


def test_a_planted_violation_of_each_kind_is_refused() -> None:
    missed = []
    for relative, source in PLANTED:
        path = ROOT / relative
        if not violations([path], {path: source}):
            missed.append(f"{relative}: {source!r}")
    assert not missed, "planted violations the rules let through:" + show(missed)


def test_what_the_rules_allow_is_allowed() -> None:
    allowed = [
        ("core/domain/planted.py", "import pydantic\nfrom core.domain import rules"),
        ("core/app/planted.py", "from store import asks\nfrom core.domain import rules"),
        ("handlers/slack/planted.py", "from core.app.service import Service\nfrom . import blocks"),
        ("handlers/github/planted.py", "from core.app.ports import AskRow\nimport gidgethub"),
        ("handlers/email/planted.py", "from handlers.kit.cards import card\nimport aiosmtplib"),
        ("handlers/web/planted.py", "from handlers.kit.forms import protect"),
        ("ask_api/planted.py", "from core.app.service import Service\nimport aiohttp"),
        ("clients/python/aye_client/client.py", "import aiohttp\nfrom aye_client.errors import Answer"),
        ("clients/python/aye_client/verify.py", "import hmac\nimport jwt\nfrom . import verifiers"),
        ("ask_api/external.py", "from aye_client.verifiers import Verifier"),
        ("ask_api/client.py", "from aye_client import *"),
        ("bot/planted.py", "from store.db import Store\nfrom handlers.slack import PLUGIN"),
    ]
    refused = [f"{r}: {found}" for r, s in allowed
               if (found := violations([ROOT / r], {ROOT / r: s}))]
    assert not refused, "imports the rules should allow:" + show(refused)


def test_the_import_reader_sees_through_relative_and_guarded_imports() -> None:
    # The rules above would pass vacuously if imports() missed what it should find.
    core = imports(ROOT / "core/app/asking.py")
    assert any(i.target.startswith("store.") for i in core)
    assert "store.db.Store" in _resolved("handlers/slack/x.py", GUARDED_STORE)
    assert _resolved("handlers/slack/x.py", "from . import blocks") == ["handlers.slack.blocks"]
    assert _resolved("handlers/slack/__init__.py", "from .plugin import PLUGIN") == [
        "handlers.slack.plugin.PLUGIN"
    ]
    assert _resolved("handlers/slack/x.py", "from ..github import y") == ["handlers.github.y"]


def _resolved(relative: str, source: str) -> list[str]:
    return [i.target for i in imports(ROOT / relative, source)]


# -- no circle of files inside a room ------------------------------------------------------------


def graph(paths: list[Path], sources_: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """Which module of aye each module imports, by module name: at module level (TYPE_CHECKING
    included: a type-only import is still a dependency) and inside functions (an import put
    there to dodge a circle still closes it); `from a import b` where `a.b` is a module counts
    as importing `a.b`."""
    modules = {module_of(p) for p in sources(*FOLDERS)} | {module_of(p) for p in paths}
    edges: dict[str, set[str]] = {}
    for path in paths:
        me = module_of(path)
        text = (sources_ or {}).get(path)
        for imp in imports(path, text):
            if not is_aye(imp.target):
                continue
            target = imp.target if imp.target in modules else imp.target.rpartition(".")[0]
            if target in modules and target != me:
                edges.setdefault(me, set()).add(target)
    return edges


def circles(edges: dict[str, set[str]], room: Callable[[str], str]) -> list[list[str]]:
    """Circles of imports among modules of one room (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in edges.get(node, ()):
            if room(nxt) != room(node):
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def _room_name(module: str) -> str:
    root = CLIENT_ROOT if under(module, CLIENT) else ROOT
    return room_of(root / (module.replace(".", "/") + ".py"))[0]


def test_no_circle_of_files_inside_a_room() -> None:
    found = circles(graph(sources(*FOLDERS)), _room_name)
    assert not found, "files of one room that import each other in a circle:" + show(
        [" -> ".join(c) for c in found]
    )


def test_a_planted_circle_is_found() -> None:
    a, b = ROOT / "core/app/planted_a.py", ROOT / "core/app/planted_b.py"
    planted = {a: "from core.app import planted_b\n",
               b: GUARDED_STORE.replace("store.db import Store", "core.app.planted_a import X")}
    found = circles(graph([a, b], planted), _room_name)
    assert found == [["core.app.planted_a", "core.app.planted_b"]]


def test_a_circle_closed_inside_a_function_is_found() -> None:
    a, b = ROOT / "store/planted_a.py", ROOT / "store/planted_b.py"
    planted = {a: "from store import planted_b\n",
               b: "def f() -> None:\n    from store.planted_a import X\n"}
    found = circles(graph([a, b], planted), _room_name)
    assert found == [["store.planted_a", "store.planted_b"]]


# -- sizes ---------------------------------------------------------------------------------


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_file_is_over_400_lines() -> None:
    found = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sources(*FOLDERS) if (n := _lines(p)) > MAX_FILE_LINES
    ]
    assert not found, f"files over {MAX_FILE_LINES} lines:{show(found)}"


# A schema revision is one declaration of tables, not logic to split.
REVISIONS = ROOT / "store" / "migrations" / "versions"


def test_no_function_is_over_50_lines() -> None:
    found: list[str] = []
    for path in sources(*FOLDERS):
        if path.is_relative_to(REVISIONS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                # From `def` to the end of the body; decorators are not counted.
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name} ({length} lines)")
    assert not found, f"functions over {MAX_FUNCTION_LINES} lines:{show(found)}"


# -- the tests' own layout: the layer is the folder -------------------------------------------


def test_every_test_module_is_in_its_layer_folder() -> None:
    tests = ROOT / "tests"
    loose = [p.name for p in tests.glob("test_*.py")]
    assert not loose, f"test modules outside tests/unit, tests/middle, tests/e2e: {loose}"
    for layer in ("unit", "middle", "e2e"):
        assert list((tests / layer).glob("test_*.py")), f"tests/{layer} has no tests"

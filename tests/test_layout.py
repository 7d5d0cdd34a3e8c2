"""The house rules of the source tree, read with `ast` (nothing is imported): who may import
whom, and how long a file or a function may grow."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "store", "handlers", "ask_api")
AYE = frozenset(PACKAGES)
# The process's own modules: the composition root and what only the process runs.
PROCESS = (
    "bot.app", "bot.surfaces", "bot.config", "bot.settings", "bot.loops", "bot.cli",
    "bot.tokens", "bot.listener", "bot.logs", "bot.cli_text", "bot.cli_formats", "bot.cli_show",
    "bot.cli_watch", "bot.cli_mcp", "bot.metrics",
)
SHARED_HANDLERS = ("handlers.env", "handlers.retry")
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 50


@dataclass(frozen=True, slots=True)
class Import:
    path: Path
    line: int
    target: str  # `a.b` for `import a.b`; `a.b.c` for `from a.b import c`

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.target}"


def sources(*folders: str) -> list[Path]:
    return sorted(
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts
    )


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, source: str | None = None) -> Iterator[Import]:
    """Every import in the file (or in `source`, read as that file), wherever it is
    (TYPE_CHECKING blocks and functions too), with relative imports made absolute."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    package = module_of(path) if path.name == "__init__.py" else module_of(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Import(path, node.lineno, f"{base}.{alias.name}")


def under(target: str, *modules: str) -> bool:
    return any(target == m or target.startswith(m + ".") for m in modules)


def is_aye(target: str) -> bool:
    return target.partition(".")[0] in AYE


def violations(folder: str, allowed: Callable[[Import], bool]) -> list[str]:
    return [str(i) for p in sources(folder) for i in imports(p) if not allowed(i)]


def show(found: list[str]) -> str:
    return "\n" + "\n".join(found)


# -- imports -------------------------------------------------------------------------------


def _core_may(imp: Import) -> bool:
    top = imp.target.partition(".")[0]
    # Pure computation: validation (jsonschema, its referencing, and regex for bounded patterns),
    # and RFC 8785 for the canonical identity of a call (core/domain/identity.py).
    if top in sys.stdlib_module_names or top in (
        "pydantic", "jsonschema", "referencing", "regex", "rfc8785",
    ):
        return True
    return under(imp.target, "store", "bot.core")


def test_the_core_imports_the_standard_library_pydantic_and_the_store_only() -> None:
    found = violations("bot/core", _core_may)
    assert not found, f"bot/core imports what it may not (no sqlalchemy either):{show(found)}"


def test_the_store_imports_nothing_of_aye_above_it() -> None:
    found = violations("store", lambda i: not under(i.target, "bot", "handlers", "ask_api"))
    assert not found, f"store/ imports aye's upper layers:{show(found)}"


def _surface_folders() -> list[Path]:
    return sorted(p for p in (ROOT / "handlers").iterdir() if (p / "__init__.py").exists())


def test_a_surface_imports_the_core_the_store_and_itself_only() -> None:
    folders = _surface_folders()
    assert {"slack", "github"} <= {p.name for p in folders}
    found: list[str] = []
    for folder in folders:
        own = f"handlers.{folder.name}"
        for path in sources(f"handlers/{folder.name}"):
            found += [
                str(i) for i in imports(path)
                if is_aye(i.target) and not under(i.target, "bot.core", "store", own, *SHARED_HANDLERS)
            ]
    assert not found, (
        "a surface imports another surface, the API or the process "
        f"(it may import bot.core, store, itself, {', '.join(SHARED_HANDLERS)}):{show(found)}"
    )


def test_the_api_imports_no_surface_and_no_process_module() -> None:
    found = violations("ask_api", lambda i: not under(i.target, "handlers", *PROCESS))
    assert not found, f"ask_api/ imports a surface or the process:{show(found)}"


def test_the_import_reader_sees_through_relative_and_guarded_imports() -> None:
    # The rules above would pass vacuously if imports() missed what it should find.
    core = imports(ROOT / "core/app/asks.py")
    assert any(i.target.startswith("store.") for i in core)
    surface = [i.target for i in imports(ROOT / "core/app/ports.py")]
    assert "core.app.asks.Asks" in surface  # under `if TYPE_CHECKING:`
    assert _resolved("handlers/slack/x.py", "from . import blocks") == ["handlers.slack.blocks"]
    assert _resolved("handlers/slack/__init__.py", "from .plugin import PLUGIN") == [
        "handlers.slack.plugin.PLUGIN"
    ]
    assert _resolved("handlers/slack/x.py", "from ..github import y") == ["handlers.github.y"]


def _resolved(relative: str, source: str) -> list[str]:
    return [i.target for i in imports(ROOT / relative, source)]


# -- sizes ---------------------------------------------------------------------------------


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_file_is_over_400_lines() -> None:
    found = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in sources(*PACKAGES) if (n := _lines(p)) > MAX_FILE_LINES
    ]
    assert not found, f"files over {MAX_FILE_LINES} lines:{show(found)}"


# A schema revision is one declaration of tables, not logic to split.
REVISIONS = ROOT / "store" / "migrations" / "versions"


def test_no_function_is_over_50_lines() -> None:
    found: list[str] = []
    for path in sources(*PACKAGES):
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

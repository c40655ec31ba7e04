"""The quick tier (`python -m pytest -m "not slow"`) still touches every module of the package.

Static checks of the test sources (no fit runs): every module of `python/fastpcam/` is
imported, directly or through the modules it imports, by a test file that keeps at least one
test in the quick tier; and every entry of conftest's `SLOW` list names a test that exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import SLOW

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parents[1] / "python" / "fastpcam"

pytestmark = pytest.mark.skipif(not PACKAGE.is_dir(), reason="needs the repository's sources")


def modules() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py")} | {"_core"}


def imports_of(tree: ast.AST, package_relative: bool) -> set[str]:
    """The package's modules a module imports (anywhere: an import inside a function counts),
    and the names it takes from the package's top level (as `name:<n>`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            if package_relative and node.level == 1:
                if mod:
                    out.add(mod.split(".")[0])
                else:
                    out |= {a.name for a in node.names}
            elif mod == "fastpcam":
                out |= {a.name for a in node.names} | {f"name:{a.name}" for a in node.names}
            elif mod.startswith("fastpcam."):
                out.add(mod.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("fastpcam."):
                    out.add(a.name.split(".")[1])
                elif a.name == "fastpcam":
                    out.add("__init__")
    return out


def top_level(tree: ast.Module) -> ast.Module:
    """The statements that run on import (an import inside a function runs only when the
    function is called, so a test of the caller need not touch the callee's module)."""
    body = []
    for node in tree.body:
        if isinstance(node, ast.Try):
            body += node.body
        elif not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            body.append(node)
    return ast.Module(body=[n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])


def package_graph() -> tuple[dict[str, set[str]], dict[str, str]]:
    """Each module → the package modules it imports when imported; each top-level name → its
    module."""
    graph = {p.stem: imports_of(top_level(ast.parse(p.read_text())), True) for p in PACKAGE.glob("*.py")}
    for path in PACKAGE.glob("*.py"):  # a function that imports a module when called: `name()`
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                graph.setdefault(f"call:{node.name}", set()).update(imports_of(node, True))
    exported = {}
    for node in ast.walk(ast.parse((PACKAGE / "__init__.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for a in node.names:
                exported[a.asname or a.name] = node.module
    return graph, exported


def touched_by(path: Path, graph: dict[str, set[str]], exported: dict[str, str]) -> set[str]:
    """The modules a test file imports, with everything they import in turn. `fastpcam`'s
    `__init__` counts only for the names taken from it, so importing the package alone does
    not count as touching every module."""
    text = path.read_text()
    direct = {m for m in imports_of(ast.parse(text), False) if not m.startswith("name:")}
    direct |= {exported[n[5:]] for n in imports_of(ast.parse(text), False) if n.startswith("name:") and n[5:] in exported}
    direct |= {exported[n] for n in re.findall(r"\bfastpcam\.(\w+)", text) if n in exported}
    direct |= set(re.findall(r"\bfastpcam\.(_?\w+)\b", text)) & modules()
    direct |= set(re.findall(r"[\"']fastpcam\.(_?\w+)[\"']", text)) & modules()
    if re.search(r"[\"'](?:fastpcam|-m\", \"fastpcam)[\"']", text) or "_cli" in text:
        direct |= {"__main__", "_cli"}
    direct |= {f"call:{n}" for n in re.findall(r"\b(\w+)\(", text) if f"call:{n}" in graph}
    seen, todo = set(), [m for m in direct if m != "__init__"]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        todo += [d for d in graph.get(m, ()) if d in modules() and d != "__init__"]
    return (seen & modules()) | ({"__init__"} if direct else set())


def quick_files() -> list[Path]:
    """Test files with at least one test function not in SLOW."""
    out = []
    for path in sorted(TESTS.glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        tests = re.findall(r"^(?:    )?def (test_\w+)", path.read_text(), re.M)
        if any(f"{path.name}::{t}" not in SLOW for t in tests):
            out.append(path)
    return out


def test_every_module_is_imported_by_a_quick_test():
    graph, exported = package_graph()
    touched: set[str] = set()
    for path in quick_files():
        touched |= touched_by(path, graph, exported)
    missing = sorted(modules() - touched)
    assert not missing, f"no quick test imports {missing}: move one of their tests out of SLOW"


def test_every_slow_entry_names_a_test():
    stale = []
    for entry in SLOW:
        file, _, name = entry.partition("::")
        path = TESTS / file
        fn = name.split("::")[-1]
        if not path.exists() or not re.search(rf"^\s*def {re.escape(fn)}\(", path.read_text(), re.M):
            stale.append(entry)
    assert not stale, f"conftest.SLOW names tests that do not exist: {sorted(stale)}"

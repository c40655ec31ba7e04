"""The docs match the code: every section of `docs/design.md` that the code cites exists, and
`rust/lib.rs`'s layer order is the real one (each module uses only modules listed before it).

Pure text checks of the repository: they need no build and run in the quick tier.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUST = ROOT / "rust"
DESIGN = ROOT / "docs" / "design.md"

pytestmark = pytest.mark.skipif(not DESIGN.exists(), reason="needs the repository's sources")

# "DESIGN §10", "DESIGN §3 / §8", "DESIGN §1–2, §7", "docs/design.md §11": the section numbers
CITATION = re.compile(r"(?:DESIGN|design\.md)\s*((?:§\s*\d+(?:\s*[–-]\s*\d+)?[\s,/and]*)+)")


def design_sections() -> set[int]:
    return {int(m.group(1)) for m in re.finditer(r"^## (\d+)\.", DESIGN.read_text(), re.M)}


def cited_sections() -> dict[int, list[str]]:
    """Section number → the places (file:line) that cite it, in the code, tests and docs."""
    cited: dict[int, list[str]] = {}
    files = [*RUST.rglob("*.rs"), *(ROOT / "tests").rglob("*.rs"), *(ROOT / "python").rglob("*.py"),
             *(p for p in (ROOT / "tests" / "python").glob("*.py") if p.name != "test_design.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    for path in files:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            for m in CITATION.finditer(line):
                for a, b in re.findall(r"§\s*(\d+)(?:\s*[–-]\s*(\d+))?", m.group(1)):
                    for sec in range(int(a), int(b or a) + 1):
                        cited.setdefault(sec, []).append(f"{path.relative_to(ROOT)}:{lineno}")
    return cited


def test_every_cited_design_section_exists():
    cited = cited_sections()
    assert {10, 11} <= set(cited), "the parser finds the monotone and pair citations"
    missing = {sec: places for sec, places in cited.items() if sec not in design_sections()}
    assert not missing, f"docs/design.md lacks the cited sections: {missing}"


def test_no_citation_of_shared_docs():
    """The code cites the repository's docs, never a path outside it."""
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in RUST.rglob("*.rs")
           for i, line in enumerate(p.read_text().splitlines(), 1) if "../shared/" in line and "DESIGN" in line]
    assert not bad, bad


# ---- lib.rs's layer order -------------------------------------------------------------------


def module_files() -> dict[str, Path]:
    """Module path ("descent::kinds", "descent" for descent/mod.rs) → its file."""
    out = {}
    for path in RUST.rglob("*.rs"):
        rel = path.relative_to(RUST).with_suffix("")
        parts = list(rel.parts)
        if parts[0] == "bindings" or parts == ["lib"]:
            continue
        if parts[-1] == "mod":
            parts = parts[:-1]
        out["::".join(parts)] = path
    return out


def layer_order() -> list[str]:
    """The modules in the order lib.rs's documentation lists them: each `[`a::b`]` link, and a
    folder's own module (`a/mod.rs`) where it is named, or else where the folder is linked."""
    doc = "\n".join(line[3:] for line in (RUST / "lib.rs").read_text().splitlines() if line.startswith("//!"))
    order: list[str] = []
    explicit_mod = set(re.findall(r"`(\w+)/mod\.rs`", doc))
    # each list item's leading link, and "the folder's own module (`a/mod.rs`)"
    for m in re.finditer(r"^\s*\* (?:\[`([\w:]+)`\]|the folder's own module \(`(\w+)/mod\.rs`\))", doc, re.M):
        name = m.group(1) or m.group(2)
        if m.group(1) and name in explicit_mod:  # the folder's link: its mod.rs comes later
            continue
        if name not in order:
            order.append(name)
    return order


def unit_of(module: str, order: list[str]) -> str | None:
    """The listed module that `module` belongs to (its longest listed prefix)."""
    parts = module.split("::")
    for k in range(len(parts), 0, -1):
        name = "::".join(parts[:k])
        if name in order:
            return name
    return None


def expand_use(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` → ["a::b", "a::c::d", "a::c::e"] (glob and self kept as their path)."""
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", tree)
    if not m:
        return [re.sub(r"::(self|\*)$", "", re.sub(r"as\w+$", "", tree))]
    head, body = m.group(1), m.group(2)
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    items.append(cur)
    return [f"{head}::{p}" if head else p for item in items if item for p in expand_use(item)]


def used_modules(path: Path, module: str) -> set[str]:
    """Every crate module named in `path`'s code (use trees, inline `crate::`/`super::` paths)."""
    text = re.sub(r"//[^\n]*", "", path.read_text())  # comments and docs name modules freely
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]  # unit tests (at the end) may use anything
    paths = []
    for m in re.finditer(r"\buse\s+((?:crate|super)::[^;]+);", text):
        paths += expand_use(m.group(1))
    paths += re.findall(r"\b((?:crate|super)(?:::\w+)+)", text)
    out = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            parts = parts[1:]
        else:  # super:: is the module's parent (of a folder's mod.rs too: its folder's parent)
            base = module.split("::")
            while parts and parts[0] == "super":
                parts, base = parts[1:], base[:-1]
            parts = base + parts
        out.add("::".join(parts))
    return out


def test_layer_order_is_real():
    order = layer_order()
    files = module_files()
    assert len(order) >= 20 and "descent" in order and "fit::pairs" in order, order
    unlisted = {m for m in files if unit_of(m, order) is None and m != "testing"}
    assert not unlisted, f"modules lib.rs does not list: {sorted(unlisted)}"
    wrong = []
    for module, path in files.items():
        user = unit_of(module, order)
        if user is None:
            continue
        for used in used_modules(path, module):
            unit = unit_of(used, order)
            if unit is None or unit == user:
                continue
            if order.index(unit) > order.index(user):
                wrong.append(f"{path.relative_to(ROOT)} ({user}) uses {unit}, listed after it")
    assert not wrong, "\n".join(sorted(set(wrong)))

"""The README's Python examples run as written (STYLE §8: the quick start is run in CI)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    # Blocks indented inside a list item: strip the common indentation.
    out = []
    for b in blocks:
        lines = b.splitlines()
        indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
        out.append("\n".join(l[indent:] for l in lines))
    return out


def test_readme_has_a_short_quick_start():
    blocks = _python_blocks()
    assert blocks, "README.md has no python example"
    assert len([l for l in blocks[0].splitlines() if l.strip()]) <= 10


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_readme_example_runs(index, capsys):
    code = _python_blocks()[index]
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), "the example prints its results"


def test_readme_is_for_users():
    """Issue 47: at most 250 lines; the measurement history lives in docs/benchmarks.md."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, len(lines)
    assert (README.parent / "docs" / "benchmarks.md").exists()


def test_readme_links_exist():
    text = README.read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in t]
    missing = [t for t in targets if not (README.parent / t).exists()]
    assert targets and not missing, missing

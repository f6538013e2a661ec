"""Every ```python block of the documentation runs, so the docs cannot rot.

The blocks come from docs/**/*.md (the site's own pages) and from the
specification's Python binding, spec/10-binding.md. Each block is a complete program: it
is written to a file of its own and run with this interpreter in a fresh
process, so blocks that start worker processes (spawn re-imports the file)
run as a reader would run them. A block passes when it exits with status 0.

A block that is intentionally not runnable (a fragment, a signature listing)
is marked by an HTML comment on the line just before its fence:

    <!-- no-test -->
    ```python
    ...
    ```

The comment renders as nothing on the site. Keep such blocks rare. A block that
only lists signatures (classes and functions whose bodies are `...`, as in the
spec's binding section) is compiled, not run. Skipped blocks are compiled too,
so they still have to be valid Python.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.processes  # real worker processes: .ci/run's second layer

ROOT = Path(__file__).resolve().parents[1]
NO_TEST = "<!-- no-test -->"
# The spec's sections 1-9 are language-neutral and hold fragments; its binding section holds programs.
SPEC_PAGES = [ROOT / "spec" / "10-binding.md"]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)[^\n]*$")


def _sources() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "spec" not in p.relative_to(ROOT / "docs").parts]
    return docs + [p for p in SPEC_PAGES if p.exists()]


def python_blocks(path: Path) -> list[tuple[int, str, bool]]:
    """(line, code, skipped) for each ```python fence of a Markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, indent, lang, start = m["fence"], m["indent"], m["lang"].lower(), i
        body = []
        i += 1
        while i < len(lines) and not (lines[i].strip().startswith(fence) and lines[i].strip().strip(fence[0]) == ""):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang in ("python", "py", "python3"):
            prev = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            out.append((start + 1, "\n".join(body) + "\n", prev == NO_TEST))
    return out


def _is_stub(node: ast.AST) -> bool:
    """True for a body that only declares: `...`, docstrings, annotations, stub defs and classes."""
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)
    if isinstance(node, ast.AnnAssign):
        return node.value is None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return all(_is_stub(n) for n in node.body)
    return isinstance(node, (ast.Pass, ast.Import, ast.ImportFrom))


def is_signature_listing(code: str) -> bool:
    tree = ast.parse(code)
    return bool(tree.body) and any(isinstance(n, ast.ClassDef) for n in tree.body) and all(
        _is_stub(n) for n in tree.body
    )


CASES = [
    pytest.param(path, line, code, skipped, id=f"{path.relative_to(ROOT)}:{line}")
    for path in _sources()
    for line, code, skipped in python_blocks(path)
]


def test_docs_have_examples():
    assert any(p.values[0].name == "quickstart.md" for p in CASES), "the quickstart's program was not found"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("path, line, code, skipped", CASES)
def test_example_runs(path, line, code, skipped, tmp_path):
    compile(code, f"{path.name}:{line}", "exec")  # every block is valid Python, run or not
    if skipped:
        pytest.skip(f"marked {NO_TEST}")
    if is_signature_listing(code):
        return
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    try:
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=200
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{path.name}:{line} did not finish in {e.timeout} s\n{e.stdout or ''}\n{e.stderr or ''}")
    assert proc.returncode == 0, (
        f"{path.name}:{line} exited with {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    )

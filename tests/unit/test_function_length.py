"""No function of the service runs past 80 lines: a longer one is several steps to name."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 80


def _functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, length) of every function in the file, nested ones too; a length
    counts from `def` to the body's last line, decorators left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.name, node.lineno, (node.end_lineno or node.lineno) - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _long_functions(paths: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} {name} ({length} lines)"
        for path in paths
        for name, line, length in _functions(path)
        if length > MAX_LINES
    ]


def test_no_function_in_chalicelib_or_app_is_over_80_lines():
    """GIVEN every module of chalicelib/ and app.py
    WHEN their functions are measured from `def` to the end of the body
    THEN none is over 80 lines; the failure names each one that is."""
    paths = [ROOT / "app.py", *sorted((ROOT / "chalicelib").rglob("*.py"))]
    assert len(paths) > 50, paths  # the walk found the service, not an empty folder
    assert _long_functions(paths) == []


def test_the_measure_names_a_function_over_80_lines(tmp_path):
    """GIVEN a module with one function of 81 lines and one of 80
    WHEN it is measured THEN the 81-line one alone is named, with its line and length."""
    body = "    x = 1\n"
    module = tmp_path / "long.py"
    module.write_text("def long():\n" + body * 80 + "\n\ndef fits():\n" + body * 79)
    found = [(name, length) for name, _, length in _functions(module)]
    assert found == [("long", 81), ("fits", 80)]
    assert [n for n, _, length in _functions(module) if length > MAX_LINES] == ["long"]

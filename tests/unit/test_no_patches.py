"""Tests swap collaborators through Deps, Settings or a function's parameters, never by
patching: no setattr (the fixture's or the builtin), no patch from the standard mock library, no
assignment to a module's attribute."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PATCHING = re.compile(r"monkeypatch\.setattr|mock\.patch|unittest\.mock|\bsetattr\(|\.context\(\)")


def _test_sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p.resolve() != Path(__file__).resolve())


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _module_names(tree: ast.AST) -> set[str]:
    """The names a file binds to modules by importing them."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    names.add(alias.asname or alias.name)
    return names


def _module_assignments(path: Path) -> list[str]:
    """`module.name = ...` (or `+=`, or `del`) anywhere in the file, as path:line."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules = _module_names(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            root = target
            while isinstance(root, ast.Attribute):
                root = root.value
            if root is not target and isinstance(root, ast.Name) and root.id in modules:
                found.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}")
    return found


def test_no_test_patches_a_function_or_a_module():
    """GIVEN every test module and helper under tests/ (this one aside)
    WHEN their text and syntax are read
    THEN none calls setattr (through the monkeypatch fixture, a context of it, or the builtin),
    uses the standard mock library or its patch, or assigns to an imported module's attribute."""
    patched = [
        f"{path.relative_to(TESTS.parent)}:{n}: {line.strip()}"
        for path in _test_sources()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if PATCHING.search(line)
    ]
    assigned = [hit for path in _test_sources() for hit in _module_assignments(path)]
    assert patched == [], patched
    assert assigned == [], assigned

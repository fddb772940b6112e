"""Imports point one way (docs/decisions/0022-layers.md): entrypoints, then ops and workers,
then services, then the wiring, then the store and providers, then the leaves. No module
imports one of a layer above it, ops and workers never import each other, entrypoints reach
the database only through the layers beneath them, and no two modules import each other
through any path. Every import counts, those inside functions and under TYPE_CHECKING too."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).parents[2]

# Top first. A module belongs to the layer of the longest prefix naming it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("entrypoints", ("app", "chalicelib.cli", "chalicelib.cli_http", "chalicelib.web",
                     "chalicelib.mcp", "chalicelib.openapi", "chalicelib.sdk_codegen",
                     "chalicelib.dashboard")),
    ("handlers", ("chalicelib.ops", "chalicelib.workers")),
    ("services", ("chalicelib.services", "chalicelib.brief", "chalicelib.extraction",
                  "chalicelib.search.turns", "chalicelib.registry", "chalicelib.auth")),
    ("wiring", ("chalicelib.deps",)),
    ("parts", ("chalicelib.store", "chalicelib.providers", "chalicelib.search",
               "chalicelib.policies")),
    ("leaves", ("chalicelib.config", "chalicelib.errors", "chalicelib.names",
                "chalicelib.sensitivity", "chalicelib.blacklist", "chalicelib.observability",
                "chalicelib.storable", "chalicelib.secrets", "chalicelib.concurrent_work",
                "chalicelib.hooks", "chalicelib.cursors", "chalicelib.transcript_file",
                "chalicelib.fact_quality", "chalicelib.context_budget")),
]  # fmt: skip
# Siblings in one layer that must not import each other.
APART = [("chalicelib.ops", "chalicelib.workers")]
# Layers that may not import these directly (an entrypoint holds no connection of its own).
NOT_FROM = {"entrypoints": ("chalicelib.store",)}
PACKAGES = ("chalicelib", "chalicelib.ops", "chalicelib.workers", "chalicelib.services",
            "chalicelib.store", "chalicelib.providers", "chalicelib.search", "chalicelib.brief",
            "chalicelib.extraction")  # fmt: skip


def modules() -> dict[str, Path]:
    found = {"app": ROOT / "app.py"}
    for path in (ROOT / "chalicelib").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of our own modules (a name imported from a package counts as
    the module it names, else as the package)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [f"{base}.{a.name}" for a in node.names]
            for target in targets:
                found = resolve(target) if target.split(".")[0] in ("chalicelib", "app") else None
                if found and found != mod:
                    edges[mod].add(found)
    return edges


def layer_of(mod: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), i)
    if best is None:
        raise AssertionError(f"{mod} is in no layer: add it to LAYERS in {__file__}")
    return best[1]


def _under(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


def violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import that climbs a layer, crosses between siblings kept apart, or reaches what
    its layer may not import directly."""
    found = []
    for mod, targets in sorted(edges.items()):
        if mod in PACKAGES and mod != "chalicelib.ops":
            continue  # a package's __init__ holds no code of its own
        here = layer_of(mod)
        for t in sorted(targets):
            if t in PACKAGES and t != "chalicelib.ops":
                continue
            there = layer_of(t)
            if there < here:
                found.append(f"{mod} ({LAYERS[here][0]}) imports {t} ({LAYERS[there][0]})")
            for a, b in APART:
                if (_under(mod, a) and _under(t, b)) or (_under(mod, b) and _under(t, a)):
                    found.append(f"{mod} imports {t}: {a} and {b} never import each other")
            for banned in NOT_FROM.get(LAYERS[here][0], ()):
                if _under(t, banned):
                    found.append(f"{mod} imports {t}: {LAYERS[here][0]} do not import {banned}")
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The sets of two or more modules that import each other through some path (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(root: str) -> None:
        work: list[tuple[str, Iterable[str]]] = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    members = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        members.append(w)
                        if w == v:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_is_in_an_import_circle():
    assert circles(imports(modules())) == []


def test_no_import_climbs_a_layer_or_crosses_between_ops_and_workers():
    assert violations(imports(modules())) == []


def test_every_module_has_a_layer():
    for mod in modules():
        if mod not in PACKAGES or mod == "chalicelib.ops":
            layer_of(mod)


def test_the_checks_find_a_climb_a_crossing_and_a_circle():
    """GIVEN a graph with a store module importing an op, a worker importing an op, an
    entrypoint reaching the store and two modules importing each other
    THEN each is named."""
    edges = {
        "chalicelib.store.tokens": {"chalicelib.ops.memory"},
        "chalicelib.workers.titler": {"chalicelib.ops.memory"},
        "chalicelib.mcp": {"chalicelib.store.tokens"},
        "chalicelib.ops.memory": {"chalicelib.ops.session"},
        "chalicelib.ops.session": {"chalicelib.ops.memory"},
    }
    found = violations(edges)
    assert "chalicelib.store.tokens (parts) imports chalicelib.ops.memory (handlers)" in found
    assert any("never import each other" in v for v in found)
    assert any("entrypoints do not import chalicelib.store" in v for v in found)
    assert circles(edges) == [["chalicelib.ops.memory", "chalicelib.ops.session"]]


def test_imports_inside_functions_count():
    mods = modules()
    # The worker imports the registry inside a function only.
    assert "chalicelib.registry" in imports(mods)["chalicelib.workers.extraction_queue"]


def test_the_server_registers_the_ops_on_first_use_not_at_import():
    """GIVEN a fresh process WHEN it imports app.py THEN no op module is loaded (a health check
    needs none: cold starts); WHEN a route names an op THEN the ops are there to answer it."""
    code = (
        "import sys, app\n"
        "from chalicelib import web\n"
        "loaded = 'chalicelib.ops' in sys.modules\n"
        "status = web.wrong_method('conversation.append')[0]\n"
        "print(loaded, status)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["False", "405"], out.stderr[-2000:]

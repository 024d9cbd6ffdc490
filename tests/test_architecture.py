"""The layering the compiler's design promises (docs/architecture.md), checked on the source text:
imports form no cycle through core.py or compiler/, core imports nothing above it, the
compiler never reaches Array, jit or the public namespaces, compiler modules import no private
name of another module, no primitive name is a string key in compiler/, and no module of
numbax/_src passes 600 lines."""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

from numbax._src import core

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "numbax"
MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str) -> list[tuple[str, str]]:
    """(module, imported name or "") for every import in a module, function bodies included."""
    path = _modules()[name]
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                pkg = pkg[:len(pkg) - (node.level - 1)]
                base = ".".join([*pkg, *([node.module] if node.module else [])])
            out.extend((base, a.name) for a in node.names)
    return [(m, n) for m, n in out if m.startswith("numbax")]


def _resolve(module: str, attr: str) -> set[str]:
    """The numbax modules an import runs: the module named (a package's __init__ too) and the
    submodule when the imported name is one."""
    mods = _modules()
    out = {f"{module}.{attr}"} if f"{module}.{attr}" in mods else set()
    while module and module not in mods:
        module = module.rpartition(".")[0]
    return out | {module}


@cache
def _graph() -> dict[str, set[str]]:
    return {m: set().union(*(_resolve(t, a) for t, a in _imports(m))) - {m, ""}
            for m in _modules()}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    graph, index, low, stack, on, out = _graph(), {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_through_core_or_the_compiler():
    bad = [c for c in _cycles()
           if any(m == "numbax._src.core" or ".compiler" in m for m in c)]
    assert not bad, f"import cycles: {bad}"


def test_core_imports_nothing_above_it():
    allowed = {"numbax._src", "numbax._src.avals", "numbax._src.dtypes", "numbax._src.config",
               "numbax._src.errors"}
    # core_pp (core's printing, split off for size) sits at core's level: it may be imported
    # by core, and imports nothing above core itself
    graph = _graph()
    assert graph["numbax._src.core_pp"] <= allowed, graph["numbax._src.core_pp"] - allowed
    allowed = allowed | {"numbax._src.core_pp"}
    assert graph["numbax._src.core"] <= allowed, graph["numbax._src.core"] - allowed


def test_compiler_reaches_no_array_jit_or_public_namespace():
    bad = sorted((m, t) for m, targets in _graph().items() if ".compiler" in m
                 for t in targets if t in ("numbax._src.array", "numbax._src.jit",
                                           "numbax._src.dispatch")
                 or not t.startswith("numbax._src"))
    assert not bad, bad


def test_compiler_imports_no_private_name_of_another_module():
    bad = [(m, t, a) for m in _modules() if ".compiler" in m
           for t, a in _imports(m) if a.startswith("_") and a != "__version__"]
    assert not bad, bad


def _primitive_names() -> set[str]:
    import numbax  # noqa: F401  (every namespace registers its primitives)

    return {p.name for p in core.abstract_eval_rules}


def test_no_primitive_name_is_a_string_key_in_the_compiler():
    """Lowerings are keyed by primitive objects: a literal collection of two or more strings
    naming primitives in compiler/ is a name-keyed table."""
    names, bad = _primitive_names(), []
    for m, path in _modules().items():
        if ".compiler" not in m:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                elts = node.elts
            elif isinstance(node, ast.Dict):
                elts = [k for k in node.keys if k is not None]
            else:
                continue
            hits = [e.value for e in elts if isinstance(e, ast.Constant) and e.value in names]
            if len(hits) >= 2:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {hits}")
    assert not bad, bad


@pytest.mark.parametrize("name", sorted(m for m in _modules() if "._src" in m))
def test_module_size(name):
    lines = _modules()[name].read_text().count("\n")
    assert lines <= MAX_LINES, f"{name} has {lines} lines; split it by family"

"""The import walker of the architecture tests: every module of a room and the imports it makes, read
statically (imports inside functions and methods count too; those under ``if TYPE_CHECKING`` do not),
the graph they form and its circles. Used by ``tests/book/test_architecture.py`` (all three rooms)
and ``tests/lib/test_agents_layout.py`` (the library's agents)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository root."""


def room_modules(package: str) -> dict[str, Path]:
    """Every module of the room ``package`` by dotted name (a package by its own name, at its ``__init__.py``)."""
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def module_imports(name: str, path: Path) -> list[tuple[str, list[str], int]]:
    """(imported module, imported names, line) of every import in ``path``, relative ones resolved."""
    is_pkg = path.name == "__init__.py"
    base = name.split(".") if is_pkg else name.split(".")[:-1]
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}  # annotations only: not run, not a circle
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                pkg = base[: len(base) - node.level + 1]
                mod = ".".join(pkg + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.append((mod, [a.name for a in node.names], node.lineno))
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which of ``modules`` each of them imports (imports from outside ``modules`` left out)."""
    graph = {m: set() for m in modules}
    for m, path in modules.items():
        for mod, names, _ in module_imports(m, path):
            # `from pkg import sub` imports the submodule pkg.sub when it is one
            targets = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in modules] or [mod]
            for t in targets:
                while t and t not in modules:  # `import saliency_lib.agents.dqn` resolves to the module
                    t = t.rpartition(".")[0]
                if t and t != m:
                    graph[m].add(t)
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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

"""The layout of ``saliency_lib.agents``: no import cycles, no private names across modules, small modules.

Read statically (``ast``), so imports inside functions count as well: a lazy
import hides a cycle from Python but not from a reader.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import saliency_lib.agents

PACKAGE_ROOT = Path(saliency_lib.agents.__file__).resolve().parents[1]  # .../saliency_lib
AGENTS = "saliency_lib.agents"
MAX_LINES = 600


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE_ROOT.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> list[tuple[str, list[str]]]:
    """(imported module, names imported from it) for every import in the file, relative ones resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            out.append((target, names))
            out += [(f"{target}.{n}", []) for n in names if f"{target}.{n}" in known]  # "from . import envs"
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    return {m: {t for t, _ in _imports(m, p, known) if t in known and t != m} for m, p in mods.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_agents_module_takes_part_in_an_import_cycle():
    cycles = [c for c in _cycles(_graph()) if any(m == AGENTS or m.startswith(AGENTS + ".") for m in c)]
    assert not cycles, f"import cycles through saliency_lib.agents: {cycles}"


def test_agents_modules_import_no_private_names_from_other_modules():
    mods = _modules()
    bad = []
    for name, path in mods.items():
        if not (name == AGENTS or name.startswith(AGENTS + ".")):
            continue
        for target, names in _imports(name, path, set(mods)):
            bad += [f"{name}: from {target} import {n}" for n in names if n.startswith("_") and n != "__version__"]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_agents_modules_are_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in Path(saliency_lib.agents.__file__).parent.glob("*.py")}
    assert max(sizes.values()) <= MAX_LINES, sizes


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", saliency_lib.agents.__all__)
def test_public_names_resolve(name):
    obj = getattr(saliency_lib.agents, name)
    home = getattr(obj, "__module__", None)
    if home and home.startswith(AGENTS):  # classes and functions: the same object in their home module
        assert getattr(importlib.import_module(home), obj.__name__) is obj

"""The house rules of the code, checked by walking every module's imports.

* Three rooms: ``saliency_lib`` < ``saliency_study`` < ``saliency_book``; each imports only the
  rooms before it.
* No import circles in any room, counting imports inside functions too.
* Inside the library, each layer (envs → agents → inference → explainers → metrics → sweep →
  cli) imports only layers below it.
* The library names no repository path, no chapter and no profile in its code.
* Private names stay private: no module imports an ``_underscore`` name from another module.
* Every module stays at most 600 lines.
"""

from __future__ import annotations

import ast
import re

import pytest
from import_walk import ROOT, import_cycles, import_graph, module_imports, room_modules

LIB, STUDY, BOOK = "saliency_lib", "saliency_study", "saliency_book"
ROOMS = (LIB, STUDY, BOOK)
"""The three rooms, in order: each may import only those before it."""

# Layer of each top-level part of the library; a module may import only its own layer or lower ones.
LAYERS = {
    "_io": 0, "games": 0, "results": 0, "validation": 0, "versions": 0, "viz": 0, "__init__": 9, "__main__": 9,
    "envs": 1,
    "agents": 2, "states": 2, "highlights": 2, "play": 2, "inference": 2,
    "explainers": 3, "train": 3,
    "metrics": 4, "video": 4, "game_video": 4, "objects": 4,
    "sweep": 5,
    "cli": 6,
}


def _package_parent(m: str) -> set[str]:
    """A package's __init__ may import its own submodules, and a submodule its package: not a circle."""
    return {m.rpartition(".")[0]} if "." in m else set()


@pytest.mark.parametrize("room", ROOMS)
def test_no_import_circles_in_any_room(room):
    graph = import_graph(room_modules(room))
    # a package __init__ re-exporting its submodules, which import each other through it, is the usual
    # Python idiom; what must not happen is a circle between two modules that are not packages
    packages = {m for m, p in room_modules(room).items() if p.name == "__init__.py"}
    pruned = {m: {t for t in ts if t not in packages} for m, ts in graph.items() if m not in packages}
    assert import_cycles(pruned) == []


def test_the_cycle_finder_finds_a_circle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _layer(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    return LAYERS[part]


def _room(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in ROOMS else None


@pytest.mark.parametrize("room", ROOMS)
def test_rooms_import_only_the_rooms_before_them(room):
    bad = []
    for m, path in room_modules(room).items():
        for mod, _, line in module_imports(m, path):
            other = _room(mod)
            if other is not None and ROOMS.index(other) > ROOMS.index(room):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}, a later room")
    assert bad == []


def test_no_import_upward_inside_the_library():
    modules = room_modules(LIB)
    bad = []
    for m, path in modules.items():
        for mod, _, line in module_imports(m, path):
            if mod.startswith(LIB + ".") and _layer(mod) > _layer(m):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod} from a higher layer")
    assert bad == []


_STUDY_WORDS = re.compile(r"\bdata/|\bnotebooks/|\bbook/|\bchapters?\b|\bREPO_ROOT\b|\bprofiles?\b")
"""What the library's code never names: the repository's folders, chapters and profiles."""


def _code_strings_and_names(tree: ast.AST):
    """The string constants (docstrings left out) and the identifiers of a module."""
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr


def test_the_library_names_no_repository_path_chapter_or_profile():
    bad = [f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}" for m, path in room_modules(LIB).items()
           for line, text in _code_strings_and_names(ast.parse(path.read_text())) if _STUDY_WORDS.search(text)]
    assert bad == []


def test_the_path_check_can_fail():
    tree = ast.parse('"""A docstring may say data/agents."""\nREPO_ROOT = "data/agents"\nx = profile\n')
    assert [line for line, text in _code_strings_and_names(tree) if _STUDY_WORDS.search(text)] == [2, 2, 3]


def test_every_library_part_has_a_layer():
    parts = {m.split(".")[1] for m in room_modules(LIB) if "." in m}
    assert parts <= set(LAYERS), f"new top-level parts need a layer: {sorted(parts - set(LAYERS))}"


@pytest.mark.parametrize("package", ROOMS)
def test_private_names_stay_private(package):
    modules = room_modules(package)
    bad = []
    for m, path in modules.items():
        for mod, names, line in module_imports(m, path):
            if _room(mod) is None or mod == m:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {private} from {mod}")
    assert bad == []


def test_chapters_never_import_each_other():
    modules = room_modules(BOOK)
    bad = []
    for m, path in modules.items():
        if not m.split(".")[-1].startswith("ch"):
            continue
        chapter = m.split(".")[-1].split("_")[0]  # ch3_sanity and ch3_figures are one chapter
        for mod, _, line in module_imports(m, path):
            last = mod.split(".")[-1]
            if mod.startswith(BOOK + ".ch") and last.split("_")[0] != chapter:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports chapter {mod}")
    assert bad == []


@pytest.mark.parametrize("room", ROOMS)
def test_modules_are_small(room):
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in (ROOT / room).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 600]
    assert long == []

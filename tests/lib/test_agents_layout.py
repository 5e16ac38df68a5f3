"""The layout of ``saliency_lib.agents``: no import cycles, no private names across modules, small modules.

Read statically with the import walker of ``tests/import_walk.py`` (imports inside functions count as
well: a lazy import hides a cycle from Python but not from a reader).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
from import_walk import import_cycles, import_graph, module_imports, room_modules

import saliency_lib.agents

AGENTS = "saliency_lib.agents"
MAX_LINES = 600


def _in_agents(name: str) -> bool:
    return name == AGENTS or name.startswith(AGENTS + ".")


def test_no_agents_module_takes_part_in_an_import_cycle():
    cycles = [c for c in import_cycles(import_graph(room_modules("saliency_lib"))) if any(_in_agents(m) for m in c)]
    assert not cycles, f"import cycles through saliency_lib.agents: {cycles}"


def test_agents_modules_import_no_private_names_from_other_modules():
    bad = []
    for name, path in room_modules("saliency_lib").items():
        if not _in_agents(name):
            continue
        for target, names, _ in module_imports(name, path):
            bad += [f"{name}: from {target} import {n}" for n in names if n.startswith("_") and n != "__version__"]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_agents_modules_are_small():
    sizes = {p.name: len(p.read_text().splitlines()) for p in Path(saliency_lib.agents.__file__).parent.glob("*.py")}
    assert max(sizes.values()) <= MAX_LINES, sizes


def test_cycle_finder_finds_a_cycle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", saliency_lib.agents.__all__)
def test_public_names_resolve(name):
    obj = getattr(saliency_lib.agents, name)
    home = getattr(obj, "__module__", None)
    if home and home.startswith(AGENTS):  # classes and functions: the same object in their home module
        assert getattr(importlib.import_module(home), obj.__name__) is obj

"""The top-level API: ``import saliency_lib`` gives the first names a user needs, lazily."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import saliency_lib

HOMES = {
    "load_agent": "saliency_lib.agents", "wrap_agent": "saliency_lib.agents", "make_env": "saliency_lib.envs",
    "collect_states": "saliency_lib.states", "get_explainer": "saliency_lib.explainers", "EXPLAINERS": "saliency_lib.explainers",
    "Insertion": "saliency_lib.metrics", "Deletion": "saliency_lib.metrics", "RandomisationTest": "saliency_lib.metrics",
}


def test_all_names_the_first_things_a_user_reaches_for():
    assert sorted(saliency_lib.__all__) == sorted(HOMES)


@pytest.mark.parametrize("name", saliency_lib.__all__)
def test_every_name_resolves_to_the_object_of_its_home_module(name):
    obj = getattr(saliency_lib, name)
    assert obj is getattr(importlib.import_module(HOMES[name]), name)
    defined_in = getattr(obj, "__module__", None)
    if defined_in:  # functions and classes: the very object where it is defined
        assert getattr(importlib.import_module(defined_in), obj.__name__) is obj
    assert name in dir(saliency_lib)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="module 'saliency_lib' has no attribute 'explain'"):
        saliency_lib.explain  # noqa: B018


def test_import_is_cheap_and_lazy():
    """``import saliency_lib`` imports no torch (the book command starts without it); first use does."""
    code = (
        "import sys, saliency_lib\n"
        "assert 'torch' not in sys.modules, 'import saliency_lib imported torch'\n"
        "assert not any(m.startswith('saliency_lib.') for m in sys.modules), "
        "sorted(m for m in sys.modules if m.startswith('saliency_lib.'))\n"
        "assert sorted(dir(saliency_lib)) == sorted(set(dir(saliency_lib))) "
        "and set(saliency_lib.__all__) <= set(dir(saliency_lib))\n"
        "saliency_lib.get_explainer\n"
        "assert 'torch' in sys.modules and 'saliency_lib.explainers' in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

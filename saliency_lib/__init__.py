"""saliency_lib: a reproducible study of perturbation saliency and mask attention for Atari agents.

The names a user reaches for first live here, as ``captum.attr`` gathers its
methods: agents (:func:`load_agent`, :func:`wrap_agent`), environments
(:func:`make_env`), states (:func:`collect_states`), explainers
(:func:`get_explainer`, :data:`EXPLAINERS`) and metrics (:class:`Insertion`,
:class:`Deletion`, :class:`RandomisationTest`). Each is imported from its home
module on first use, so ``import saliency_lib`` stays cheap (no torch):

>>> import saliency_lib as sl
>>> agent = sl.load_agent("data/agents/dqn-Breakout-s0")          # or "official:Breakout", "sb3:model.zip"
>>> states = sl.collect_states(agent, 8, seed=0).states             # (8, 4, 84, 84) in [0, 1]
>>> maps = sl.get_explainer("occlusion", agent).attribute(states)   # .maps: (8, 84, 84)
>>> table = sl.Insertion().evaluate(agent, states, saliency=maps)   # tidy table: curves and AUCs

Everything else stays in the subpackages: :mod:`saliency_lib.agents`,
:mod:`saliency_lib.envs`, :mod:`saliency_lib.explainers`, :mod:`saliency_lib.metrics`.
"""

import importlib as _importlib

__version__ = "0.1.0"

#: Public name → the module it is imported from on first use.
_EXPORTS = {
    "load_agent": "saliency_lib.agents",
    "wrap_agent": "saliency_lib.agents",
    "make_env": "saliency_lib.envs",
    "collect_states": "saliency_lib.states",
    "get_explainer": "saliency_lib.explainers",
    "EXPLAINERS": "saliency_lib.explainers",
    "Insertion": "saliency_lib.metrics",
    "Deletion": "saliency_lib.metrics",
    "RandomisationTest": "saliency_lib.metrics",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> object:
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

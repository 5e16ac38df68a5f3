"""Name → explainer registry, and the display label of each registered method."""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from functools import partial
from types import MappingProxyType

from ..agents.base import Agent
from ._base import Explainer
from .gradient import GradCAM, Gradient, IntegratedGradients
from .lime import Lime
from .mask_attention import MaskAttention
from .noise_sensitivity import NoiseSensitivity
from .occlusion import Occlusion
from .random_map import RandomMap
from .rise import RISE
from .sarfa import SARFA

__all__ = ["EXPLAINERS", "get_explainer", "method_label", "METHOD_LABELS", "explainer_parameters", "check_explainer_params"]

#: Registry: name → constructor (a class, or a ``functools.partial`` fixing a preset).
#: Call as ``EXPLAINERS[name](agent, **params)`` or through :func:`get_explainer`.
EXPLAINERS = MappingProxyType(
    {
        "occlusion": partial(Occlusion),
        "occlusion_gray": partial(Occlusion, colour=0.5),  # Huber et al. §6.2 ablation
        "noise_sensitivity": partial(NoiseSensitivity),
        "ns_original": partial(NoiseSensitivity, variant="original"),
        "ns_chosen": partial(NoiseSensitivity, variant="chosen"),
        "ns_black": partial(NoiseSensitivity, variant="black"),
        "sarfa": partial(SARFA),
        "sarfa_blur": partial(SARFA, perturbation="blur"),  # Huber et al. §6.2 ablation
        "rise": partial(RISE),
        "lime_slic": partial(Lime, segmentation="slic"),
        "lime_quickshift": partial(Lime, segmentation="quickshift"),
        "lime_felzenszwalb": partial(Lime, segmentation="felzenszwalb"),
        "mask_policy": partial(MaskAttention, branch="policy"),
        "mask_value": partial(MaskAttention, branch="value"),
        "gradient": partial(Gradient),
        "integrated_gradients": partial(IntegratedGradients),
        "gradcam": partial(GradCAM),
        "random": partial(RandomMap),
    }
)


def get_explainer(name: str, agent: Agent, **params) -> Explainer:
    """Build the explainer registered as ``name`` for ``agent``.

    Parameters
    ----------
    name : str
        A key of :data:`EXPLAINERS`.
    agent : saliency_lib.agents.Agent
        The agent to explain.
    **params
        The method's keyword parameters (see its class). A preset's fixed
        parameters (e.g. ``variant`` of ``"ns_chosen"``) cannot be overridden.

    Returns
    -------
    Explainer

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid ones), a parameter that
        contradicts the preset, or an invalid parameter value.
    TypeError
        For a parameter the method does not have.
    """
    if name not in EXPLAINERS:
        raise ValueError(f"unknown explainer {name!r}; valid names are: {', '.join(EXPLAINERS)}")
    ctor = EXPLAINERS[name]
    fixed = sorted(set(params) & set(ctor.keywords))
    if fixed:
        preset = ", ".join(f"{k}={ctor.keywords[k]!r}" for k in fixed)
        general = [k for k, c in EXPLAINERS.items() if c.func is ctor.func and not c.keywords]
        fix = f"use {general[0]!r}" if general else f"construct {ctor.func.__name__} directly"
        raise ValueError(f"explainer {name!r} fixes {preset}; {fix} to choose {', '.join(fixed)}")
    return ctor(agent, **params)


def _unknown(name) -> ValueError:
    close = difflib.get_close_matches(str(name), list(EXPLAINERS), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ValueError(f"unknown explainer {name!r}{hint} (valid names: {', '.join(EXPLAINERS)})")


def explainer_parameters(name: str) -> tuple[str, ...]:
    """The keyword parameters that the explainer registered as ``name`` takes.

    They are its constructor's signature (:func:`inspect.signature`) without the agent and without
    what its preset fixes.
    """
    if name not in EXPLAINERS:
        raise _unknown(name)
    ctor = EXPLAINERS[name]
    sig = inspect.signature(ctor.func)
    return tuple(p for p in list(sig.parameters)[1:] if p not in ctor.keywords
                 and sig.parameters[p].kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD))


def check_explainer_params(name: str, params: dict, *, what: str = "") -> None:
    """Raise ``ValueError`` for a parameter that the explainer ``name`` does not take or its preset fixes.

    The message suggests the closest parameter name. The values are checked by the explainer itself
    when it is built.
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"{what}parameters of {name!r} must be a dict, got {type(params).__name__}")
    allowed = explainer_parameters(name)
    ctor = EXPLAINERS[name]
    for key in params:
        if key in ctor.keywords:
            raise ValueError(f"{what}explainer {name!r} fixes {key}={ctor.keywords[key]!r}; it cannot be set")
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{what}explainer {name!r} has no parameter {key!r}{hint} (its parameters: {', '.join(allowed)})")


def method_label(name: str) -> str:
    """Display label of the explainer registered as ``name``, for figures and tables.

    The label comes from the class: its :attr:`~saliency_lib.explainers.Explainer.labels`
    entry for ``name`` where the preset makes a distinct method (``"ns_chosen"`` →
    ``"NS chosen action"``), else its :attr:`~saliency_lib.explainers.Explainer.label`
    (``"occlusion"`` → ``"Occlusion"``). An explainer instance gives the same through
    :attr:`~saliency_lib.explainers.Explainer.method_label`.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the valid ones).
    """
    if name not in EXPLAINERS:
        raise ValueError(f"unknown explainer {name!r}; valid names are: {', '.join(EXPLAINERS)}")
    cls = EXPLAINERS[name].func
    return cls.labels.get(name, cls.label)


#: Read-only registry name → display label (:func:`method_label` of every name of :data:`EXPLAINERS`).
METHOD_LABELS = MappingProxyType({name: method_label(name) for name in EXPLAINERS})

"""Saliency methods for Atari agents, with one Captum-style interface.

Every method is a class constructed with the agent and its hyper-parameters
(defaults: the final parameters of Huber et al. 2022), and called as
``Method(agent, **params).attribute(states, target=None, hidden=None)``, which
returns an :class:`Attribution` with one ``(H, W)`` map per state.

========================  ==============================  ===========================================================
registry name             class                           reference
========================  ==============================  ===========================================================
``occlusion``             :class:`Occlusion`              Zeiler & Fergus 2014; Huber et al. §3.1
``noise_sensitivity``     :class:`NoiseSensitivity`       Greydanus et al. 2018; Huber et al. §3.2
``ns_original``           NoiseSensitivity                variant original: blur, L2 over all actions
``ns_chosen``             NoiseSensitivity                variant chosen: blur, 1 − softmax(Q′)_a
``ns_black``              NoiseSensitivity                variant black: black disk, L2
``sarfa``                 :class:`SARFA`                  Puri et al. 2020; Huber et al. §3.3
``rise``                  :class:`RISE`                   Petsiuk et al. 2018; Huber et al. §3.4
``lime_slic``             :class:`Lime`                   segmentation slic; Ribeiro et al. 2016, Huber et al. §3.5
``lime_quickshift``       Lime                            segmentation quickshift
``lime_felzenszwalb``     Lime                            segmentation felzenszwalb
``mask_policy``           :class:`MaskAttention`          Itaya et al. 2021 (policy mask)
``mask_value``            :class:`MaskAttention`          Itaya et al. 2021 (value mask)
``gradient``              :class:`Gradient`               Simonyan et al. 2014 (Captum)
``integrated_gradients``  :class:`IntegratedGradients`    Sundararajan et al. 2017 (Captum)
``gradcam``               :class:`GradCAM`                Selvaraju et al. 2017 (Captum)
``random``                :class:`RandomMap`              chance reference
========================  ==============================  ===========================================================

Each method carries its display label (``Occlusion.label``, and ``labels`` for the
presets that make a distinct method): :func:`method_label` (``"ns_chosen"`` → ``"NS
chosen action"``), the read-only :data:`METHOD_LABELS` and ``explainer.method_label``.

Examples
--------
>>> import torch
>>> from saliency_lib.agents import DQNConfig, DQNNet, QAgent
>>> from saliency_lib.explainers import Occlusion
>>> agent = QAgent(DQNNet(DQNConfig(n_actions=4)), game="Breakout", preset="dqn", n_actions=4)
>>> result = Occlusion(agent, patch=12).attribute(torch.rand(2, 4, 84, 84))
>>> tuple(result.maps.shape), result.forward_passes
((2, 84, 84), 50)
"""

from ._base import OUTPUTS, Attribution, Explainer, explainable_outputs
from ._perturbation import PerturbationExplainer
from ._precision import BF16_DEFAULTS, PRECISIONS, default_precision
from ._registry import (
    EXPLAINERS,
    METHOD_LABELS,
    check_explainer_params,
    explainer_parameters,
    get_explainer,
    method_label,
)
from .gradient import GradCAM, Gradient, IntegratedGradients
from .lime import SEGMENTATIONS, Lime
from .mask_attention import MaskAttention
from .noise_sensitivity import NoiseSensitivity
from .occlusion import Occlusion
from .random_map import RandomMap
from .rise import RISE
from .sarfa import SARFA

__all__ = [
    "Attribution",
    "Explainer",
    "PerturbationExplainer",
    "Occlusion",
    "NoiseSensitivity",
    "SARFA",
    "RISE",
    "Lime",
    "SEGMENTATIONS",
    "MaskAttention",
    "Gradient",
    "IntegratedGradients",
    "GradCAM",
    "RandomMap",
    "EXPLAINERS",
    "get_explainer",
    "explainer_parameters",
    "check_explainer_params",
    "METHOD_LABELS",
    "method_label",
    "explainable_outputs",
    "OUTPUTS",
    "PRECISIONS",
    "BF16_DEFAULTS",
    "default_precision",
]

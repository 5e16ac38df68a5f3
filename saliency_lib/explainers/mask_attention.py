"""The learned attention masks of a Mask-Attention actor-critic (Itaya et al. 2021) as saliency maps."""

from __future__ import annotations

from types import MappingProxyType

import torch

from ..agents.base import Agent
from ..validation import check_choice
from ._base import Explainer, ExplainResult
from ._masks import bilinear_resize

__all__ = ["MaskAttention", "BRANCHES", "DISPLAYS"]

BRANCHES = ("policy", "value")
#: ``mask``: the sigmoid mask M the network multiplies in; ``sig5``: sigmoid(5·z), the official display.
DISPLAYS = ("mask", "sig5")


class MaskAttention(Explainer):
    """Adapter that turns a Mask-A3C agent's own attention mask into a saliency map.

    Stages (Itaya et al. 2021, §1.3 and §4):

    1. One forward pass of the agent on the state (with its recurrent state).
    2. Read the branch's mask: ``policy_mask``/``value_mask``, ``M = sigmoid(z)``
       on the 10 × 10 feature grid (``display="mask"``, the default: the mask the
       network actually multiplies onto its features), or ``sigmoid(5·z)``
       (``display="sig5"``, the official visualisation's display variant, computed
       from ``policy_att``/``value_att``).
    3. Upsample bilinearly to the input (80 × 80).

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        An agent whose outputs include ``policy_mask`` and/or ``value_mask``
        (:class:`~saliency_lib.agents.MaskA3CNet` variants with masks).
    branch : {"policy", "value"}, optional
        Which mask (default ``"policy"``).
    display : {"mask", "sig5"}, optional
        Default ``"mask"``.
    batch_size, precision
        Accepted for a uniform interface; the single forward pass runs in float32
        (``precision`` must be ``"fp32"``).

    Notes
    -----
    * The official visualiser also min-max normalises the sig5 maps over a whole
      episode and resizes them back through the crop onto the raw frame; both are
      display steps left to :mod:`saliency_lib.viz` (``mask_to_frame``). Maps here
      are not normalised.
    * The map does not depend on ``target``; the target (default: greedy action)
      is only recorded. Forward passes: 1 per state.

    References
    ----------
    .. [1] Itaya, H., Hirakawa, T., Yamashita, T., Fujiyoshi, H., & Sugiura, K.
       (2021). Visual explanation using attention mechanism in actor-critic-based
       deep reinforcement learning. IJCNN.
    """

    name = "mask"
    label = "Mask attention"
    labels = MappingProxyType({"mask_policy": "Policy mask", "mask_value": "Value mask"})
    supported_outputs = ()
    _uses_clean_readout = False
    reference = "Itaya et al. 2021 (IJCNN), §1.3 and §4"

    def __init__(self, agent: Agent, *, branch: str = "policy", display: str = "mask", batch_size: int | None = None,
                 precision: str | None = None):
        self.branch = check_choice("branch", branch, BRANCHES)
        super().__init__(agent, output=None, batch_size=batch_size, precision=precision)
        self.display = check_choice("display", display, DISPLAYS)
        self._init_kwargs.pop("output")
        self._remember(branch=self.branch, display=self.display)

    @property
    def method_name(self) -> str:
        """Registry name of this configured method: ``mask_policy`` or ``mask_value``."""
        return f"mask_{self.branch}"

    def _resolve_output(self, output):
        key = f"{self.branch}_mask"
        have = [o for o in self.agent.outputs if o.endswith("_mask")]
        if key not in have:
            valid = ", ".join(repr(o.removesuffix("_mask")) for o in have) or "none (it has no attention masks)"
            raise ValueError(f"{self.agent!r} has no {key!r} output; valid branches for this agent: {valid}")
        return key

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        if self.display == "mask":
            coarse = clean[f"{self.branch}_mask"]
        else:
            coarse = torch.sigmoid(5.0 * clean[f"{self.branch}_att"])
        coarse = coarse.float()
        return ExplainResult(bilinear_resize(coarse, self._hw), 0, coarse=coarse)

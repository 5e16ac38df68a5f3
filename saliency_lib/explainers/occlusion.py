"""Occlusion Sensitivity (Zeiler & Fergus 2014) in the form used by Huber et al. (2021)."""

from __future__ import annotations

import math
from types import MappingProxyType

import torch

from ..agents.base import Agent
from ..validation import check_float, check_int
from ._base import ExplainResult
from ._masks import bilinear_resize, box_indices, grid_positions
from ._perturbation import PerturbationExplainer

__all__ = ["Occlusion"]


class Occlusion(PerturbationExplainer):
    """Occlusion Sensitivity: how much hiding each patch changes the explained output.

    Stages (Huber et al. 2021, §3.1; their ``custom_occlusion_sensitvity.py``,
    adapted from tf-explain):

    1. Tile the input with ``patch × patch`` squares whose top-left corners lie on
       a grid of step ``stride`` (``ceil(H / stride) × ceil(W / stride)`` squares,
       clipped at the border; 42 × 42 for the defaults).
    2. For each square, set it to ``colour`` in every stacked frame and run the agent.
    3. Score each square by ``1 − f_a(I′)``, with ``f_a`` the explained output of
       action ``a`` (``output="all"``: ``½‖y(I) − y(I′)‖²``).
    4. Resize the coarse score grid to the input bilinearly (``Attribution.coarse``
       keeps it).

    Defaults are the paper's final parameters: patch 2, stride 2, colour 0 (black),
    raw Q-values of the chosen action.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    patch : int, optional
        Side of the square in pixels (default 2).
    stride : int, optional
        Grid step in pixels (default: ``patch``, non-overlapping squares as in the paper).
    colour : float, optional
        Value written into the occluded square (default 0.0, black; the paper's
        tuned alternative is 0.5, grey).
    output : str, optional
        The explained output (default: ``q`` or ``logits``; ``probs`` is the
        paper's "softmax" option).
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer`.
    naive : bool, optional
        Force full forward passes instead of incremental inference (default
        False; the maps agree to float rounding, see
        :class:`~saliency_lib.explainers.PerturbationExplainer`).

    Notes
    -----
    * The score is ``1 − f_a(I′)`` as in the paper, not ``f_a(I) − f_a(I′)``
      (Captum's definition); the two differ by the constant ``1 − f_a(I)``, so
      rankings are identical.
    * Upsampling: the paper uses ``cv2.resize`` (bilinear). We use
      ``F.interpolate(mode="bilinear", align_corners=False)``, which has the same
      half-pixel coordinate mapping and border replication and equals OpenCV on
      float maps to float32 rounding (tested).
    * With ``stride == patch`` a coarse cell's centre coincides with its square's
      centre after resizing. With ``stride != patch`` (not used in the paper) the
      grid is still resized as a whole, which shifts the map by
      ``(patch − stride) / 2`` pixels; overlapping squares are not averaged as in Captum.
    * Forward passes: 1 clean + ``ceil(H/stride)·ceil(W/stride)`` per state (1 + 1764).

    References
    ----------
    .. [1] Zeiler, M. D., & Fergus, R. (2014). Visualizing and understanding
       convolutional networks. ECCV.
    .. [2] Huber, T., Limmer, B., & André, E. (2022). Benchmarking perturbation-based
       saliency maps for explaining Atari agents. Frontiers in AI 5:903875.
    """

    name = "occlusion"
    label = "Occlusion"
    labels = MappingProxyType({"occlusion_gray": "Occlusion (gray)"})
    # bf16 maps fell to Spearman 0.65 on a trained DQN agent (data/benchmarks/bf16_decision.json)
    bf16_validated = False
    reference = "Huber et al. 2022 (Frontiers in AI 5:903875), §3.1"

    def __init__(
        self,
        agent: Agent,
        *,
        patch: int = 2,
        stride: int | None = None,
        colour: float = 0.0,
        output: str | None = None,
        batch_size: int | None = None,
        precision: str | None = None,
        naive: bool = False,
    ):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        self._set_naive(naive)
        h, w = self._hw
        patch = check_int("patch", patch, minimum=1, maximum=min(h, w), hint=f"; the patch must fit the {h}×{w} input")
        stride = patch if stride is None else check_int("stride", stride, minimum=1, maximum=min(h, w),
                                                        hint=f"; the stride must fit the {h}×{w} input")
        colour = check_float("colour", colour)
        self._remember(patch=patch, stride=stride, colour=colour)
        self.patch, self.stride, self.colour = patch, stride, colour

    @property
    def method_name(self) -> str:
        """``"occlusion_gray"`` for the gray patches of Huber et al.'s §6.2 ablation (colour 0.5), else ``"occlusion"``."""
        return "occlusion_gray" if self.colour == 0.5 else "occlusion"

    @property
    def grid_shape(self) -> tuple[int, int]:
        """Shape of the coarse score grid ``(ceil(H / stride), ceil(W / stride))``."""
        h, w = self._hw
        return math.ceil(h / self.stride), math.ceil(w / self.stride)

    def _index(self, device: torch.device) -> torch.Tensor:
        """Flat pixel indices ``(P, patch²)`` of every square, computed once per device."""
        cache = self.__dict__.setdefault("_index_cache", {})
        if device not in cache:
            h, w = self._hw
            gw = self.grid_shape[1]
            k = torch.arange(self.grid_shape[0] * gw, device=device)
            tops = grid_positions(h, self.stride, device=device)[k // gw]
            lefts = grid_positions(w, self.stride, device=device)[k % gw]
            cache[device] = box_indices(tops, lefts, self.patch, (h, w))
        return cache[device]

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        h, w = self._hw
        gh, gw = self.grid_shape
        colour = self.colour
        # a pixel that already has the colour in every frame does not change (a black patch on black pixels)
        vec = self._local_perturbed_readouts(x, hidden, self._index(x.device), lambda i, clean: colour, batch_size,
                                             delta=lambda state, pert, clean, at: colour - clean, changed=(x != colour).any(1))
        coarse = self._drop_score(self._readout(clean), vec, actions).view(-1, gh, gw)
        return ExplainResult(bilinear_resize(coarse, (h, w)), gh * gw, coarse=coarse)

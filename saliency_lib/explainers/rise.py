"""RISE, Randomized Input Sampling for Explanation (Petsiuk et al. 2018), as in Huber et al. (2021)."""

from __future__ import annotations

import torch

from ..agents.base import Agent
from ..validation import check_float, check_int
from ._base import ExplainResult
from ._masks import rise_masks
from ._perturbation import PerturbationExplainer

__all__ = ["RISE"]


class RISE(PerturbationExplainer):
    """RISE: the output-weighted average of random smooth masks.

    Stages (Petsiuk et al. 2018; Huber et al. 2021, §3.4, their ``rise.py``):

    1. Once per explainer object, draw ``n_masks`` masks from ``seed`` (see
       :func:`~saliency_lib.explainers._masks.rise_masks`): binary ``grid × grid``
       grids with keep-probability ``p``, bilinearly upsampled to
       ``(grid + 1) · ceil(H / grid)`` and cropped at a random offset.
    2. For every state and mask, evaluate ``f(I ⊙ M_i)`` (the same mask on every
       stacked frame; removed regions become black).
    3. Saliency ``S = Σ_i f(I ⊙ M_i) · M_i / (n_masks · p)``.

    Defaults are the paper's final parameters: 1000 masks, grid 8, p = 0.5, raw
    Q of the chosen action.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent to explain.
    n_masks : int, optional
        Number of masks (default 1000; with ``masks`` given, its length).
    grid : int, optional
        Cells per side of the random grid, ``s`` (default 8).
    p : float, optional
        Keep-probability of a cell, in (0, 1] (default 0.5).
    seed : int, optional
        Seed of the masks (default 0).
    masks : torch.Tensor, optional
        ``(n_masks, H, W)`` masks to use instead of drawing them, e.g.
        ``other.masks`` to share one explainer's masks across agents (the sanity
        checks do; :meth:`for_agent` does it for you). ``p`` is still the
        normaliser.
    output : str, optional
        The explained scalar (default: ``q`` or ``logits``; ``probs`` is the paper's
        softmax option).
    batch_size, precision
        See :class:`~saliency_lib.explainers.Explainer`.

    Notes
    -----
    * Masks are drawn with :class:`torch.Generator` instead of NumPy's global RNG,
      so they differ from the paper's for the same seed; their distribution is
      the same. The upsampling follows ``skimage.transform.resize(order=1,
      mode='reflect', anti_aliasing=False)`` (half-pixel centres, mirror borders)
      and is computed for all masks at once as separable matrix products (tested
      against scikit-image).
    * As in the paper, the masks are reused for every state of every call.
    * Forward passes: 1 clean + ``n_masks`` per state.

    References
    ----------
    .. [1] Petsiuk, V., Das, A., & Saenko, K. (2018). RISE: Randomized input
       sampling for explanation of black-box models. BMVC.
    .. [2] Huber, T., Limmer, B., & André, E. (2022). Benchmarking perturbation-based
       saliency maps for explaining Atari agents. Frontiers in AI 5:903875.
    """

    name = "rise"
    label = "RISE"
    bf16_validated = True
    _uses_clean_readout = False
    supported_outputs = ("q", "advantage", "logits", "probs", "value")
    reference = "Petsiuk et al. 2018 (BMVC); Huber et al. 2022 (Frontiers in AI 5:903875), §3.4"

    def __init__(
        self,
        agent: Agent,
        *,
        n_masks: int | None = None,
        grid: int = 8,
        p: float = 0.5,
        seed: int = 0,
        masks: torch.Tensor | None = None,
        output: str | None = None,
        batch_size: int | None = None,
        precision: str | None = None,
    ):
        super().__init__(agent, output=output, batch_size=batch_size, precision=precision)
        h, w = self._hw
        grid = check_int("grid", grid, minimum=1, maximum=min(h, w),
                         hint=f"; the grid cannot have more cells than the {h}×{w} input has pixels per side")
        p = check_float("p", p, low=0.0, high=1.0, low_open=True, hint="; p is the probability of keeping a grid cell")
        seed = check_int("seed", seed, minimum=0)
        if masks is None:
            n_masks = 1000 if n_masks is None else check_int("n_masks", n_masks, minimum=1)
            masks = rise_masks(n_masks, grid, p, (h, w), torch.Generator().manual_seed(seed))
        else:
            if not isinstance(masks, torch.Tensor) or masks.dim() != 3 or tuple(masks.shape[1:]) != (h, w) or masks.shape[0] == 0:
                got = tuple(masks.shape) if isinstance(masks, torch.Tensor) else type(masks).__name__
                raise ValueError(f"masks must be a tensor of shape (n_masks, {h}, {w}) with n_masks >= 1, got {got}")
            if n_masks is not None and n_masks != masks.shape[0]:
                raise ValueError(f"n_masks={n_masks!r} disagrees with the {masks.shape[0]} masks given; omit n_masks")
            if masks.requires_grad or masks.dtype != torch.float32 or masks.device.type != "cpu":
                masks = masks.detach().to("cpu", torch.float32)  # else shared as is
            n_masks = masks.shape[0]
        self._masks = masks
        self._device_masks: dict[torch.device, torch.Tensor] = {}
        self.n_masks, self.grid, self.p, self.seed = n_masks, grid, p, seed
        self._remember(n_masks=n_masks, grid=grid, p=p, seed=seed)

    @property
    def masks(self) -> torch.Tensor:
        """The ``(n_masks, H, W)`` float32 masks (CPU), drawn once from ``seed``."""
        return self._masks

    def for_agent(self, agent: Agent) -> RISE:
        """The same RISE, sharing these masks, bound to ``agent``."""
        return RISE(agent, **{**self._init_kwargs, "masks": self._masks})

    def _masks_on(self, device: torch.device) -> torch.Tensor:
        if device not in self._device_masks:
            self._device_masks[device] = self._masks.to(device)
        return self._device_masks[device]

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        masks = self._masks_on(x.device)

        def make_rows(state_idx, pert_idx, rows):
            for i, run, perts in self._state_runs(state_idx, pert_idx):
                torch.mul(x[i], masks[perts, None], out=rows[run])
            return rows

        vec = self._perturbed_readouts(x, hidden, self.n_masks, make_rows, batch_size)
        f = self._select(vec, actions)  # (N, n_masks)
        maps = (f @ masks.flatten(1)).view(-1, *self._hw) / (self.n_masks * self.p)
        return ExplainResult(maps, self.n_masks)

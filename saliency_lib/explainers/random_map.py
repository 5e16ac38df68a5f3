"""The chance reference: uniform random saliency maps."""

from __future__ import annotations

import torch

from ..agents.base import Agent
from ..validation import check_int
from ._base import Explainer, ExplainResult

__all__ = ["RandomMap"]


class RandomMap(Explainer):
    """Uniform random maps in [0, 1), the chance reference of Huber et al. (``rnd_baseline``).

    One ``(N, H, W)`` draw per call from a :class:`torch.Generator` seeded with
    ``seed`` (on the CPU, then moved to the agent's device): map ``i`` depends on
    the seed and on its position ``i`` in the batch, not on the agent.

    Parameters
    ----------
    agent : saliency_lib.agents.Agent
        The agent (for the input size, the device and the recorded target).
    seed : int, optional
        Default 0.
    batch_size, precision
        Accepted for a uniform interface; unused (``precision`` must be ``"fp32"``).

    Notes
    -----
    Forward passes: 1 per state, to record the greedy action as ``target``.

    References
    ----------
    .. [1] Huber, T., Limmer, B., & André, E. (2022). Benchmarking perturbation-based
       saliency maps for explaining Atari agents. Frontiers in AI 5:903875, §6.
    """

    name = "random"
    label = "Random"
    supported_outputs = ()
    _uses_clean_readout = False
    reference = "Huber et al. 2022 (Frontiers in AI 5:903875), §6 (rnd_baseline)"

    def __init__(self, agent: Agent, *, seed: int = 0, batch_size: int | None = None, precision: str | None = None):
        super().__init__(agent, batch_size=batch_size, precision=precision)
        self.seed = check_int("seed", seed, minimum=0)
        self._init_kwargs.pop("output")
        self._remember(seed=self.seed)

    def _resolve_output(self, output):
        return "none"

    def _explain(self, x, hidden, actions, clean, batch_size) -> ExplainResult:
        maps = torch.rand((len(x), *self._hw), generator=torch.Generator().manual_seed(self.seed))
        return ExplainResult(maps.to(x.device), 0)

"""Efficient model parameter randomisation test (eMPRT; Hedström et al. 2024).

The cascading test (:mod:`saliency_lib.metrics.randomisation`) asks whether a map changes when
the weights are randomised, which noise that changes with every model passes (Binder et al.
2023). The eMPRT asks instead in which direction the map changes: an explanation of a trained
network should be more structured than one of a network with random weights, so the map's
complexity should **rise** when the network is fully randomised.

Stages of :class:`EfficientMPRT`:

1. explain every state with the agent, for the explained action ``a`` (default the greedy action);
2. randomise every layer group of a copy of the agent (the last level of the cascade of
   :func:`~saliency_lib.metrics.randomisation.randomised_models`, seeded; one randomised model
   for all states, as Hedström et al.) and explain the same states for the same actions,
   holding a recurrent agent's hidden state fixed;
3. the complexity of each map is the Shannon entropy (nats) of the histogram of its values in
   ``n_bins`` equal bins between its minimum and maximum (:func:`discrete_entropy`; invariant
   to shifting or scaling the map);
4. the score of a state is the relative rise ``(H(ê) − H(e)) / H(e)``: positive when the
   randomised map is more complex (higher is better), 0 when randomisation changes nothing,
   NaN when the original map is constant (``H(e) = 0``).

Deviation: Quantus chooses the number of bins from the data by default (its Freedman–Diaconis
rule, clamped to 10–200); here it is a fixed parameter (default 100, Quantus's fallback), so a
state's score does not depend on the other states of the batch.

References
----------
.. [1] Hedström, A., Weber, L., Lapuschkin, S., & Höhne, M. M.-C. (2024). A fresh look at sanity
   checks for saliency maps. xAI 2024 (extends "Sanity checks revisited: an exploration to
   repair the model parameter randomisation test", XAI in Action workshop, NeurIPS 2023).
.. [2] Binder, A., et al. (2023). Shortcomings of top-down randomization-based sanity checks for
   evaluations of deep neural network explanations. CVPR.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..validation import check_choice, check_int
from .randomisation import INITS, randomised_models, rebuild_explainer

__all__ = ["discrete_entropy", "EfficientMPRT"]


def discrete_entropy(saliency, n_bins: int = 100) -> float:
    """Shannon entropy (nats) of the histogram of a map's values in ``n_bins`` equal bins over its range.

    A constant map has entropy 0; a map whose values fill the bins evenly has ``ln(n_bins)``.
    """
    s = np.asarray(saliency, dtype=np.float64).reshape(-1)
    n_bins = check_int("n_bins", n_bins, minimum=2)
    if s.size == 0 or not np.isfinite(s).all():
        raise ValueError("saliency must be a non-empty map of finite values")
    lo, hi = s.min(), s.max()
    if hi <= lo:
        return 0.0
    counts = np.bincount(np.minimum(((s - lo) / (hi - lo) * n_bins).astype(np.int64), n_bins - 1), minlength=n_bins)
    p = counts[counts > 0] / s.size
    return float(-(p * np.log(p)).sum())


class EfficientMPRT:
    """The efficient MPRT: relative rise of the maps' entropy after full randomisation.

    Parameters
    ----------
    n_bins : int, optional
        Histogram bins of :func:`discrete_entropy` (default 100).
    init : {"glorot", "default"}, optional
        Re-initialisation of the weights (as :class:`~saliency_lib.metrics.RandomisationTest`).
    seed : int, optional
        Seed of the randomisation.
    """

    name = "emprt"
    higher_is_better = True
    reference = "Hedström et al. 2024 (eMPRT); Quantus EfficientMPRT"

    def __init__(self, *, n_bins: int = 100, init: str = "glorot", seed: int = 0):
        self.n_bins = check_int("n_bins", n_bins, minimum=2)
        self.init = check_choice("init", init, INITS)
        self.seed = check_int("seed", seed)

    @property
    def config(self) -> dict:
        """The constructor arguments (for cache keys)."""
        return {"metric": self.name, "n_bins": self.n_bins, "init": self.init, "seed": self.seed}

    def __repr__(self) -> str:
        return f"EfficientMPRT(n_bins={self.n_bins}, init={self.init!r}, seed={self.seed})"

    def scores(self, original, randomised) -> pd.DataFrame:
        """Complexities and scores of precomputed maps ``(N, H, W)`` of the original and the randomised model.

        Returns
        -------
        pandas.DataFrame
            ``complexity_original, complexity_randomised, value`` per state, in order.
        """
        o = np.asarray(original, dtype=np.float64)
        r = np.asarray(randomised, dtype=np.float64)
        if o.ndim != 3 or o.shape != r.shape:
            raise ValueError(f"original and randomised must be (N, H, W) maps of the same shape, got {o.shape} and {r.shape}")
        h_o = np.array([discrete_entropy(m, self.n_bins) for m in o])
        h_r = np.array([discrete_entropy(m, self.n_bins) for m in r])
        with np.errstate(divide="ignore", invalid="ignore"):
            value = np.where(h_o > 0, (h_r - h_o) / np.where(h_o > 0, h_o, 1.0), np.nan)
        return pd.DataFrame({"complexity_original": h_o, "complexity_randomised": h_r, "value": value})

    @torch.no_grad()
    def maps(self, agent, states, *, explainer, hidden=None, target=None) -> tuple[np.ndarray, np.ndarray]:
        """The maps of the agent and of its fully randomised copy, for the same actions."""
        from ._common import as_maps, as_states, as_targets, explain

        x = as_states(agent, states)
        n, hw = x.shape[0], tuple(x.shape[2:])
        tgt = as_targets(target, n, agent.n_actions)
        if tgt is None:
            tgt = agent(x, hidden)[agent.default_output].argmax(1).cpu().numpy()
        t = torch.as_tensor(tgt)
        bound = hasattr(explainer, "attribute") and not isinstance(explainer, type)
        orig_exp = explainer if bound and getattr(explainer, "agent", agent) is agent else rebuild_explainer(explainer, agent)
        *_, (_, _, model) = randomised_models(agent, order="cascading", init=self.init, seed=self.seed)
        original = as_maps(explain(orig_exp, x, target=t, hidden=hidden), n, hw, "original maps")
        randomised = as_maps(explain(rebuild_explainer(explainer, model), x, target=t, hidden=hidden), n, hw,
                             "randomised maps")
        return original, randomised

    def evaluate(self, agent, states, *, explainer, hidden=None, target=None, state_ids=None,
                 method: str = "unknown") -> pd.DataFrame:
        """Run the test.

        Parameters
        ----------
        agent : Agent
            The trained agent (left unchanged).
        states : Tensor, shape (N, C, H, W)
        explainer : explainer object or factory
            As :meth:`~saliency_lib.metrics.RandomisationTest.evaluate` (rebuilt on the randomised model).
        hidden, target
            As there: the recurrent state held fixed, the explained action (default greedy).
        state_ids : array_like of int, optional
            Values of the ``state`` column (default ``0 … N-1``).
        method : str
            Value of the ``method`` column.

        Returns
        -------
        pandas.DataFrame
            One row per state: ``method, state, complexity_original, complexity_randomised, value``
            (the relative rise; higher is better).
        """
        from ._common import as_state_ids

        original, randomised = self.maps(agent, states, explainer=explainer, hidden=hidden, target=target)
        df = self.scores(original, randomised)
        df.insert(0, "state", as_state_ids(state_ids, len(df)))
        df.insert(0, "method", method)
        return df

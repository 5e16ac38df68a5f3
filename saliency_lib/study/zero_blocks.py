"""Chapter 3: maps that are exactly zero on the black background, and what that does to the Spearman test.

Some methods give exactly zero saliency where the input is black, whatever the network's
weights: Integrated Gradients multiplies by the input minus its black baseline, and SARFA's
black disk changes nothing on a black region. The map
of the trained agent and the map of the randomised agent then share a block of tied
zeros, and the Spearman rank correlation over all pixels is high because of that block
alone. In Breakout about two thirds of the screen is black in all four stacked frames.

* :func:`zero_blocks`: per method and state, the share of pixels where the trained and the
  fully randomised maps are exactly zero, the Spearman similarity over all pixels (the
  sweep's), over the pixels outside the shared block, and the similarity that the shared
  block alone gives two otherwise independent maps.
* :func:`zero_block_summary`, :func:`style_zero_blocks`, :func:`zero_block_sentence`: the
  chapter's table and generated text.

The maps use the sweep's models (:func:`~saliency_lib.metrics.randomised_models`, cascading,
Glorot, the chapter's seed), explainer parameters and states, so the similarity over all
pixels equals the sweep's value for the same state.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..results import config_hash
from .cache import cached_table
from .display import Note
from .gallery import ExplainedAgent, load

__all__ = ["tie_floor", "zero_blocks", "zero_block_summary", "style_zero_blocks",
           "zero_block_sentence"]

N_STATES = 5
"""States per method: the first of the sweep's states."""
DRAWS = 20
"""Random draws of :func:`tie_floor` per state."""


def tie_floor(block: np.ndarray, *, draws: int = DRAWS, seed: int = 0) -> float:
    """Mean Spearman similarity of two maps that are zero on ``block`` and independent uniform noise elsewhere.

    This is what the shared zero block alone contributes to the sweep's (sign-invariant)
    Spearman similarity; it is NaN when the block covers every pixel or none.
    """
    from ..metrics.similarity import spearman

    block = np.asarray(block, dtype=bool)
    if block.all() or not block.any():
        return float("nan")
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(draws):
        a, b = (np.where(block, 0.0, rng.uniform(0.01, 1.0, block.shape)) for _ in range(2))
        vals.append(spearman(a, b, sign_invariant=True))
    return float(np.mean(vals))


def _outside(a: np.ndarray, b: np.ndarray, block: np.ndarray) -> float:
    """The sweep's Spearman similarity restricted to the pixels outside the shared zero block."""
    from ..metrics.similarity import spearman

    keep = ~block
    if keep.sum() < 3:
        return float("nan")
    return spearman(a[keep][None], b[keep][None], sign_invariant=True)  # as a 1 × K map


def zero_blocks(cfg, who: ExplainedAgent, methods: Sequence[str] | None = None, *, n_states: int = N_STATES
                ) -> pd.DataFrame | Note:
    """Zero blocks of the trained and the fully randomised agent's maps, per method and state.

    The table is stored under ``<results_dir>/sanity_zero_blocks-<hash>/`` (committed with
    the study's results), keyed by the agent's weights, the states, methods, parameters and
    seed.

    Parameters
    ----------
    cfg : SanityChapter
        The chapter's configuration (profile, seed, results directory, device).
    who : ExplainedAgent
        The agent; its Note when it is missing.
    methods : sequence of str, optional
        Registry names; default: every method of the agent's sanity sweep.
    n_states : int
        The first ``n_states`` sweep states.

    Returns
    -------
    DataFrame or Note
        Columns ``method, state, input_zero`` (share of the state's pixel locations that are zero
        in every frame), ``zero_trained, zero_random, shared`` (shares of the pixels where the
        trained map, the randomised map, both maps are exactly zero), ``spearman`` (the sweep's
        similarity), ``spearman_outside`` (over the pixels outside the shared block) and
        ``tie_floor`` (:func:`tie_floor` of the shared block).
    """
    import torch

    from ..explainers import get_explainer
    from ..metrics import ConstantMapWarning
    from ..metrics.similarity import spearman
    from .sanity import _model_at, sweep_specs
    from .sweep import applicable, study_states

    if not who:
        return who.note()
    if isinstance(n_states, bool) or not isinstance(n_states, (int, np.integer)) or n_states < 1:
        raise ValueError(f"n_states must be a positive integer, got {n_states!r}")
    agent = load(who.spec, cfg.device)
    spec = sweep_specs(cfg, who.spec)[0]
    methods = [m for m in (spec.methods if methods is None else methods) if m in spec.methods and applicable(m, agent)]
    states, scfg = study_states(who.spec, spec.n_states, seed=spec.state_seed, results_dir=cfg.results_dir)
    n = min(n_states, len(states))
    full = len(agent.layer_groups())
    config = {"what": "sanity_zero_blocks", "agent": who.spec, "sha256": agent.meta.get("sha256"),
              "states": config_hash(scfg), "n": n, "methods": methods,
              "params": {m: spec.params.get(m, {}) for m in methods}, "level": full, "order": "cascading",
              "init": "glorot", "seed": cfg.seed, "draws": DRAWS}

    def compute() -> pd.DataFrame:
        torch.set_num_threads(1)
        x = states.states[:n].to(agent.device)
        target = states.actions[:n].to(agent.device)
        hidden = None if states.hidden is None else tuple(h[:n].to(agent.device) for h in states.hidden)
        random_model = _model_at(agent, full, cfg.seed)
        rows = []
        for method in methods:
            params = dict(spec.params.get(method, {}))
            a = get_explainer(method, agent, **params).attribute(x, target=target, hidden=hidden).maps
            b = get_explainer(method, random_model, **params).attribute(x, target=target, hidden=hidden).maps
            a, b = (np.asarray(m.detach().cpu().numpy(), dtype=np.float64) for m in (a, b))
            zero_input = (x == 0).all(dim=1).float().mean(dim=(1, 2)).cpu().numpy()
            for i in range(n):
                block = (a[i] == 0) & (b[i] == 0)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConstantMapWarning)
                    rows.append({"method": method, "state": i, "input_zero": float(zero_input[i]),
                                 "zero_trained": float((a[i] == 0).mean()),
                                 "zero_random": float((b[i] == 0).mean()), "shared": float(block.mean()),
                                 "spearman": spearman(a[i], b[i], sign_invariant=True),
                                 "spearman_outside": _outside(a[i], b[i], block),
                                 "tie_floor": tie_floor(block, seed=cfg.seed + i)})
        return pd.DataFrame(rows)

    return cached_table("sanity_zero_blocks", config, compute, results_dir=cfg.results_dir)


def zero_block_summary(table: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Mean over the states per method, methods with the largest shared block first."""
    if isinstance(table, Note):
        return table
    cols = ["input_zero", "zero_trained", "zero_random", "shared", "spearman", "spearman_outside", "tie_floor"]
    s = table.groupby("method", sort=False)[cols].mean()
    s.insert(0, "states", table.groupby("method", sort=False).size())
    return s.sort_values(["shared", "spearman"], ascending=False).reset_index()


def style_zero_blocks(summary: pd.DataFrame | Note, caption: str):
    """:func:`zero_block_summary` as a captioned Styler (a Note passes through)."""
    from .sanity import _label

    if isinstance(summary, Note):
        return summary
    t = summary.drop(columns="input_zero").assign(method=summary["method"].map(_label)).rename(columns={
        "method": "Method", "states": "States", "zero_trained": "Zero, trained", "zero_random": "Zero, random",
        "shared": "Zero in both", "spearman": "Spearman, all pixels", "spearman_outside": "Spearman, outside the block",
        "tie_floor": "Spearman of the block alone"}).set_index("Method")
    pct = {c: "{:.0%}" for c in ("Zero, trained", "Zero, random", "Zero in both")}
    num = {c: "{:.2f}" for c in ("Spearman, all pixels", "Spearman, outside the block", "Spearman of the block alone")}
    return t.style.format(pct | num, na_rep="–").set_caption(caption)


def zero_block_sentence(summary: pd.DataFrame | Note, title: str, *, threshold: float = 0.5,
                        min_shared: float = 0.05):
    """Markdown: which methods' similarity is carried by the shared zero block, formatted from the numbers."""
    from IPython.display import Markdown

    from .sanity import _label, _names

    if isinstance(summary, Note):
        return summary
    input_share = float(summary["input_zero"].mean())
    lead = f"In the states of the {title}, {input_share:.0%} of the pixel locations are zero in every stacked frame."
    blocked = summary[summary["shared"] >= min_shared]
    if blocked.empty:
        return Markdown(lead + f" No method's trained and randomised maps share a zero block of {min_shared:.0%} "
                        "of the pixels or more, so ties at zero do not inflate any Spearman similarity here.")
    parts = []
    for r in blocked.itertuples():
        parts.append(f"**{_label(r.method)}** (zero in both maps on {r.shared:.0%} of the pixels; ρ = "
                     f"{r.spearman:.2f} over all pixels, {r.spearman_outside:.2f} outside the block, "
                     f"{r.tie_floor:.2f} from the block alone)")
    text = lead + " The trained and the fully randomised maps share an exact-zero block for " + "; ".join(parts) + "."
    carried = blocked[(blocked["spearman"] >= threshold) & (blocked["spearman_outside"] < threshold)]
    if len(carried):
        text += (f" For {_names(carried['method'])}, the similarity over all pixels reaches the threshold {threshold:.2f} only through "
                 "the block: outside it the maps of the trained and the random network disagree. These maps do "
                 "depend on the weights where the input is not black; the test, as Huber et al. run it, cannot see "
                 "that.")
    return Markdown(text)

"""Chapter 3: maps that are constant on the black background, and what that does to the Spearman test.

On a black region many maps take one value whatever the weights (Integrated Gradients is zero there;
SARFA's black disk and Occlusion's black patch change nothing), so the trained and the randomised
agent's maps share a block of tied pixels. At the bottom of both maps the block alone gives a high rank
correlation; at the bottom of one and in the middle of the other it gives almost none. The maps use the
sweep's models, parameters and states, so the similarity over all pixels equals the sweep's.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from saliency_book.ch3_sanity import SanityChapter, model_at, sweep_specs
from saliency_book.common import ExplainedAgent, Note, load
from saliency_lib.metrics.similarity import largest_tie, spearman_untied
from saliency_lib.results import config_hash
from saliency_study.cache import cached_table
from saliency_study.evidence import TOO_FEW, enough_states
from saliency_study.paper import GAME_ORDER

__all__ = ["N_STATES", "CARRIED", "NOT_CARRIED", "tie_floor", "tied_blocks", "tied_block_test", "tied_block_summary",
           "zero_share", "study_tied_tables", "study_tied_block_tests"]

N_STATES = 5
"""States per method: the first of the sweep's states. Below :data:`~saliency_study.evidence.MIN_STATES`,
so the test of the black-screen claim says "too few states" until a run asks for more
(``tied_blocks(..., n_states=...)``, e.g. every state of the full profile's sweep)."""
CARRIED = "carried by the block"
NOT_CARRIED = "not carried by the block"
DRAWS = 20
"""Random draws of :func:`tie_floor` per state."""


def tie_floor(block: np.ndarray, below_a: float = 0.0, below_b: float = 0.0, *, draws: int = DRAWS,
              seed: int = 0) -> float:
    """Mean Spearman similarity of two maps that share only the tied ``block``.

    Each map is constant on ``block`` and independent noise elsewhere, with a share
    ``below_a`` (``below_b``) of its other pixels below the block's value and the rest above,
    as in the maps measured. This is what the shared block alone contributes to the sweep's
    (sign-invariant) Spearman similarity. With the block at the bottom of both maps (the
    defaults) it is ``3p / ((1 − p)² + 3p)`` for a block of share ``p``; NaN when the block
    covers every pixel or none.
    """
    from saliency_lib.metrics.similarity import spearman

    block = np.asarray(block, dtype=bool)
    if block.all() or not block.any():
        return float("nan")
    rng = np.random.default_rng(seed)

    def draw(below: float) -> np.ndarray:
        noise = rng.uniform(0.01, 1.0, block.shape)
        return np.where(block, 0.0, np.where(rng.random(block.shape) < below, -noise, noise))

    return float(np.mean([spearman(draw(below_a), draw(below_b), sign_invariant=True) for _ in range(draws)]))


def tied_blocks(cfg: SanityChapter, who: ExplainedAgent, methods: Sequence[str] | None = None, *,
                n_states: int = N_STATES) -> pd.DataFrame | Note:
    """Tied blocks of the trained and the fully randomised agent's maps, per method and state.

    The first ``n_states`` sweep states, ``methods`` (default: the agent's sanity sweep). Stored under
    ``<results_dir>/sanity_tied_blocks-<hash>/``, keyed by the weights, states, methods, parameters and
    seed. Columns ``method, state, input_zero`` (share of the pixel locations zero in every frame),
    ``tied_trained, tied_random`` (share of each map at its most frequent value), ``shared`` (both),
    ``below_trained, below_random`` (share of each map's other pixels below its tied value),
    ``spearman`` (the sweep's), ``spearman_outside`` (outside the shared block) and ``tie_floor``.
    """
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import ConstantMapWarning
    from saliency_lib.metrics.similarity import spearman
    from saliency_lib.sweep import applicable, spec_states

    if not who:
        return who.note()
    if isinstance(n_states, bool) or not isinstance(n_states, (int, np.integer)) or n_states < 1:
        raise ValueError(f"n_states must be a positive integer, got {n_states!r}")
    agent = load(who.spec, cfg.device)
    spec = sweep_specs(cfg, who.spec)[0]
    methods = [m for m in (spec.methods if methods is None else methods) if m in spec.methods and applicable(m, agent)]
    states, scfg = spec_states(spec, who.spec, results_dir=cfg.results_dir)  # the sweep's own states and selection
    n = min(n_states, len(states))
    full = len(agent.layer_groups())
    config = {"what": "sanity_tied_blocks", "agent": who.spec, "sha256": agent.meta.get("sha256"),
              "states": config_hash(scfg), "n": n, "methods": methods,
              "params": {m: spec.params.get(m, {}) for m in methods}, "level": full, "order": "cascading",
              "init": "glorot", "seed": cfg.seed, "draws": DRAWS}

    def compute() -> pd.DataFrame:
        torch.set_num_threads(1)
        x = states.states[:n].to(agent.device)
        target = states.actions[:n].to(agent.device)
        hidden = None if states.hidden is None else tuple(h[:n].to(agent.device) for h in states.hidden)
        random_model = model_at(agent, full, cfg.seed)
        zero_input = (x == 0).all(dim=1).float().mean(dim=(1, 2)).cpu().numpy()
        rows = []
        for method in methods:
            params = dict(spec.params.get(method, {}))
            a = get_explainer(method, agent, **params).attribute(x, target=target, hidden=hidden).maps
            b = get_explainer(method, random_model, **params).attribute(x, target=target, hidden=hidden).maps
            a, b = (np.asarray(m.detach().cpu().numpy(), dtype=np.float64) for m in (a, b))
            for i in range(n):
                (ta, below_a), (tb, below_b) = largest_tie(a[i]), largest_tie(b[i])
                block = ta & tb
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConstantMapWarning)
                    rows.append({"method": method, "state": i, "input_zero": float(zero_input[i]),
                                 "tied_trained": float(ta.mean()), "tied_random": float(tb.mean()),
                                 "shared": float(block.mean()), "below_trained": below_a, "below_random": below_b,
                                 "spearman": spearman(a[i], b[i], sign_invariant=True),
                                 "spearman_outside": spearman_untied(a[i], b[i]),
                                 "tie_floor": tie_floor(block, below_a, below_b, seed=cfg.seed + i)})
        return pd.DataFrame(rows)

    return cached_table("sanity_tied_blocks", config, compute, results_dir=cfg.results_dir)


def tied_block_test(table: pd.DataFrame | Note, *, threshold: float = 0.5, confidence: float = 0.95,
                    n_resamples: int = 2000, seed: int = 0, game: str | None = None) -> pd.DataFrame | Note:
    """The pre-stated test of "this method's failure comes from the shared block, not from the weights".

    Per method, over the states of :func:`tied_blocks` in trajectory order, with moving-block
    bootstrap CIs (:mod:`saliency_lib.metrics.dependence`). The claim holds for a method
    (``"carried by the block"``) when all three hold, and not otherwise:

    1. it fails over all pixels: the CI of the mean Spearman similarity lies at or above ``threshold``;
    2. it passes outside the shared block: that CI lies below ``threshold``;
    3. the paired difference (all pixels − outside) is positive: its CI lies above 0
       (:func:`~saliency_lib.metrics.dependence.paired_block_test`).

    Below :data:`~saliency_study.evidence.MIN_STATES` states the verdict is "too few states".

    Returns
    -------
    DataFrame or Note
        One row per method: ``game, method, n, n_eff`` (of the differences), ``spearman``,
        ``spearman_low``, ``spearman_high``, ``outside``, ``outside_low``, ``outside_high``,
        ``diff``, ``diff_low``, ``diff_high``, ``p`` and ``verdict``.
    """
    from saliency_lib.metrics.dependence import block_bootstrap_ci, paired_block_test

    if isinstance(table, Note):
        return table
    rows = []
    for method, g in table.groupby("method", sort=False):
        g = g.sort_values("state", kind="stable")
        ok = np.isfinite(g["spearman"].to_numpy(dtype=float)) & np.isfinite(g["spearman_outside"].to_numpy(dtype=float))
        a, b = g["spearman"].to_numpy(dtype=float)[ok], g["spearman_outside"].to_numpy(dtype=float)[ok]
        kw = {"confidence": confidence, "n_resamples": n_resamples, "seed": seed}
        (al, ah), (bl, bh) = block_bootstrap_ci(a, **kw), block_bootstrap_ci(b, **kw)
        d = paired_block_test(a, b, **kw)
        if not enough_states(a.size):
            verdict = TOO_FEW
        elif al >= threshold and bh < threshold and d["ci_low"] > 0:
            verdict = CARRIED
        else:
            verdict = NOT_CARRIED
        rows.append({"game": game, "method": method, "n": int(a.size), "n_eff": d["n_eff"],
                     "spearman": float(a.mean()) if a.size else np.nan, "spearman_low": al, "spearman_high": ah,
                     "outside": float(b.mean()) if b.size else np.nan, "outside_low": bl, "outside_high": bh,
                     "diff": d["mean"], "diff_low": d["ci_low"], "diff_high": d["ci_high"], "p": d["p"],
                     "verdict": verdict})
    return pd.DataFrame(rows)


def tied_block_summary(table: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Mean over the states per method, methods with the largest shared block first."""
    if isinstance(table, Note):
        return table
    cols = ["input_zero", "tied_trained", "tied_random", "shared", "below_trained", "below_random", "spearman",
            "spearman_outside", "tie_floor"]
    s = table.groupby("method", sort=False)[cols].mean()
    s.insert(0, "states", table.groupby("method", sort=False).size())
    return s.sort_values(["shared", "spearman"], ascending=False).reset_index()


def zero_share(table: pd.DataFrame | Note) -> str:
    """The mean share of the pixel locations zero in every stacked frame of :func:`tied_blocks`' states ("–": none)."""
    return "–" if isinstance(table, Note) or table.empty else f"{table['input_zero'].mean():.0%}"


def study_tied_tables(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per game, the input of :func:`tied_block_test` from the study's stored sanity rows.

    ``rows``: the sweep's sanity rows (:func:`~saliency_book.ch3_sanity.sanity_rows` with the
    measures ``spearman`` and ``spearman_untied``). At each game's deepest level (every layer
    randomised), per method and state: ``spearman`` and ``spearman_outside`` (the sweep's
    ``spearman_untied``). States whose units were stored before the sweep measured
    ``spearman_untied`` have no such row and are left out; a game without any is left out.
    """
    out: dict[str, pd.DataFrame] = {}
    if rows.empty:
        return out
    order = {g: i for i, g in enumerate(GAME_ORDER)}
    for game, g in sorted(rows.groupby("game", sort=False), key=lambda kv: order.get(kv[0], len(order))):
        top = g[(g["level"] == g["level"].max()) & g["measure"].isin(["spearman", "spearman_untied"])]
        t = top.pivot_table(index=["method", "state"], columns="measure", values="value", aggfunc="first")
        if "spearman_untied" not in t.columns or "spearman" not in t.columns:
            continue
        t = t.dropna(subset=["spearman_untied"]).rename(columns={"spearman_untied": "spearman_outside"}).reset_index()
        if len(t):
            out[str(game)] = t[["method", "state", "spearman", "spearman_outside"]]
    return out


def study_tied_block_tests(rows: pd.DataFrame, *, threshold: float = 0.5, confidence: float = 0.95,
                           n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame | Note:
    """:func:`tied_block_test` on every game of the stored study (:func:`study_tied_tables`), stacked.

    A Note when the store holds no ``spearman_untied`` rows (the study has not run, or ran
    before the sweep measured it).
    """
    tables = study_tied_tables(rows)
    if not tables:
        return Note("The stored study holds no Spearman similarity outside the tied block yet, so the black-screen "
                    "claim is not tested on it.", title="Not yet run")
    return pd.concat([tied_block_test(t, threshold=threshold, confidence=confidence, n_resamples=n_resamples,
                                      seed=seed, game=game) for game, t in tables.items()], ignore_index=True)

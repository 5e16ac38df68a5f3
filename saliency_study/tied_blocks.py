"""Maps that are constant on the black background, and what that does to the sanity check's Spearman test.

On a black region many maps take one value whatever the weights (Integrated Gradients is zero there;
SARFA's black disk and Occlusion's black patch change nothing), so the trained and the randomised
agent's maps share a block of tied pixels. At the bottom of both maps the block alone gives a high rank
correlation; at the bottom of one and in the middle of the other it gives almost none.

* :func:`tie_floor`: what the shared block alone gives two maps;
* :func:`tied_blocks`: the blocks of the sweep's own maps, per method and state (cached);
* :func:`tied_block_test`: the pre-stated test of "this failure comes from the block";
* :func:`study_tied_tables`, :func:`study_tied_block_tests`: the same test on every state of the
  stored study, from the sweep's ``spearman_untied`` similarity.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from saliency_lib.metrics.similarity import largest_tie, spearman_untied
from saliency_lib.results import config_hash
from saliency_study.cache import cached_table
from saliency_study.catalog import load_spec
from saliency_study.evidence import MIN_ESS, WITHHELD, enough_ess, withheld_reason
from saliency_study.paper import GAME_ORDER
from saliency_study.paths import RESULTS_DIR
from saliency_study.sanity import THRESHOLD, model_at, sweep_specs

__all__ = ["N_STATES", "CARRIED", "NOT_CARRIED", "tie_floor", "tied_blocks", "tied_block_test", "tied_block_summary",
           "zero_share", "study_tied_tables", "study_tied_block_tests"]

N_STATES = 5
"""States per method: the first of the sweep's states, far below :data:`~saliency_study.evidence.MIN_ESS`
effective ones, so the test of the black-screen claim is withheld until a run asks for more
(``tied_blocks(..., n_states=...)``); the stored study tests every state (:func:`study_tied_block_tests`)."""
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


def tied_blocks(spec: str, *, profile: str, game: str, methods: Sequence[str] | None = None, n_states: int = N_STATES,
                seed: int = 0, device: str = "cpu", results_dir=RESULTS_DIR) -> pd.DataFrame:
    """Tied blocks of the trained and the fully randomised agent's maps, per method and state.

    The first ``n_states`` states of the agent's sanity sweep in ``profile``, ``methods`` (default:
    the sweep's). Stored under ``<results_dir>/sanity_tied_blocks-<hash>/``, keyed by the weights,
    states, methods, parameters and seed. Columns ``method, state, input_zero`` (share of the pixel
    locations zero in every frame), ``tied_trained, tied_random`` (share of each map at its most
    frequent value), ``shared`` (both), ``below_trained, below_random`` (share of each map's other
    pixels below its tied value), ``spearman`` (the sweep's), ``spearman_outside`` (outside the
    shared block) and ``tie_floor``.
    """
    import torch

    from saliency_lib.explainers import get_explainer
    from saliency_lib.metrics import ConstantMapWarning
    from saliency_lib.metrics.similarity import spearman
    from saliency_lib.sweep import applicable, spec_states

    if isinstance(n_states, bool) or not isinstance(n_states, (int, np.integer)) or n_states < 1:
        raise ValueError(f"n_states must be a positive integer, got {n_states!r}")
    agent = load_spec(spec, device)
    sweep = sweep_specs(profile, game, spec, seed=seed, results_dir=results_dir)[0]
    methods = [m for m in (sweep.methods if methods is None else methods) if m in sweep.methods and applicable(m, agent)]
    states, scfg = spec_states(sweep, spec, results_dir=results_dir)  # the sweep's own states and selection
    n = min(n_states, len(states))
    full = len(agent.layer_groups())
    config = {"what": "sanity_tied_blocks", "agent": spec, "sha256": agent.meta.get("sha256"),
              "states": config_hash(scfg), "n": n, "methods": methods,
              "params": {m: sweep.params.get(m, {}) for m in methods}, "level": full, "order": "cascading",
              "init": "glorot", "seed": seed, "draws": DRAWS}

    def compute() -> pd.DataFrame:
        torch.set_num_threads(1)
        x = states.states[:n].to(agent.device)
        target = states.actions[:n].to(agent.device)
        hidden = None if states.hidden is None else tuple(h[:n].to(agent.device) for h in states.hidden)
        random_model = model_at(agent, full, seed)
        zero_input = (x == 0).all(dim=1).float().mean(dim=(1, 2)).cpu().numpy()
        rows = []
        for method in methods:
            params = dict(sweep.params.get(method, {}))
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
                                 "tie_floor": tie_floor(block, below_a, below_b, seed=seed + i)})
        return pd.DataFrame(rows)

    return cached_table("sanity_tied_blocks", config, compute, results_dir=results_dir)


def tied_block_test(table: pd.DataFrame, *, threshold: float = THRESHOLD, confidence: float = 0.95,
                    n_resamples: int = 2000, seed: int = 0, game: str | None = None,
                    min_ess: float = MIN_ESS) -> pd.DataFrame:
    """The pre-stated test of "this method's failure comes from the shared block, not from the weights".

    Per method, over the states of :func:`tied_blocks` in trajectory order, with the study's intervals
    (:func:`~saliency_lib.metrics.dependence.mean_ci`: t on the effective sample size, which covers on
    dependent series as :data:`~saliency_study.evidence.MIN_ESS` assumes). The claim holds for a
    method (``"carried by the block"``) when all three hold, and not otherwise:

    1. it fails over all pixels: the CI of the mean Spearman similarity lies at or above ``threshold``;
    2. it passes outside the shared block: that CI lies below ``threshold``;
    3. the paired difference (all pixels − outside) is positive: its CI lies above 0
       (:func:`~saliency_lib.metrics.dependence.paired_block_test`).

    The verdict is ``"withheld"`` when the smallest effective sample size of the three series
    (``n_eff``) is below ``min_ess``; ``reason`` says so. A series that drifts along the game (its
    halves differ) is worth few effective states however many it has.

    Returns
    -------
    DataFrame
        One row per method: ``game, method, n, n_eff`` (the smallest of the three series'), ``spearman``,
        ``spearman_low``, ``spearman_high``, ``outside``, ``outside_low``, ``outside_high``,
        ``diff``, ``diff_low``, ``diff_high``, ``p``, ``verdict`` and ``reason``.
    """
    from saliency_lib.metrics.dependence import effective_sample_size, mean_ci, paired_block_test

    rows = []
    for method, g in table.groupby("method", sort=False):
        g = g.sort_values("state", kind="stable")
        ok = np.isfinite(g["spearman"].to_numpy(dtype=float)) & np.isfinite(g["spearman_outside"].to_numpy(dtype=float))
        a, b = g["spearman"].to_numpy(dtype=float)[ok], g["spearman_outside"].to_numpy(dtype=float)[ok]
        kw = {"confidence": confidence, "n_resamples": n_resamples, "seed": seed}
        (al, ah), (bl, bh) = mean_ci(a, **kw), mean_ci(b, **kw)
        d = paired_block_test(a, b, **kw)
        ess = min(d["n_eff"], effective_sample_size(a), effective_sample_size(b))
        if not enough_ess(ess, min_ess):
            verdict = WITHHELD
        elif al >= threshold and bh < threshold and d["ci_low"] > 0:
            verdict = CARRIED
        else:
            verdict = NOT_CARRIED
        rows.append({"game": game, "method": method, "n": int(a.size), "n_eff": ess,
                     "spearman": float(a.mean()) if a.size else np.nan, "spearman_low": al, "spearman_high": ah,
                     "outside": float(b.mean()) if b.size else np.nan, "outside_low": bl, "outside_high": bh,
                     "diff": d["mean"], "diff_low": d["ci_low"], "diff_high": d["ci_high"], "p": d["p"],
                     "verdict": verdict, "reason": withheld_reason(ess, min_ess) if verdict == WITHHELD else ""})
    return pd.DataFrame(rows)


def tied_block_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean over the states per method, methods with the largest shared block first."""
    cols = ["input_zero", "tied_trained", "tied_random", "shared", "below_trained", "below_random", "spearman",
            "spearman_outside", "tie_floor"]
    s = table.groupby("method", sort=False)[cols].mean()
    s.insert(0, "states", table.groupby("method", sort=False).size())
    return s.sort_values(["shared", "spearman"], ascending=False).reset_index()


def zero_share(table: pd.DataFrame) -> float:
    """The mean share of the pixel locations zero in every stacked frame of :func:`tied_blocks`' states (NaN: none)."""
    return float(table["input_zero"].mean()) if len(table) else float("nan")


def study_tied_tables(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per game, the input of :func:`tied_block_test` from the study's stored sanity rows.

    ``rows``: the sweep's sanity rows (:func:`~saliency_study.sanity.sanity_rows` with the
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


def study_tied_block_tests(rows: pd.DataFrame, *, threshold: float = THRESHOLD, confidence: float = 0.95,
                           n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`tied_block_test` on every game of the stored study (:func:`study_tied_tables`), stacked.

    Empty when the store holds no ``spearman_untied`` rows (the study has not run, or ran before
    the sweep measured it).
    """
    tables = study_tied_tables(rows)
    if not tables:
        return pd.DataFrame()
    return pd.concat([tied_block_test(t, threshold=threshold, confidence=confidence, n_resamples=n_resamples,
                                      seed=seed, game=game) for game, t in tables.items()], ignore_index=True)

"""Chapter 3: maps that are constant on the black background, and what that does to the Spearman test.

On a black region many maps take one value whatever the network's weights:
Integrated Gradients is exactly zero there (it multiplies by the input minus its black
baseline), SARFA's black disk changes nothing, and Occlusion's black patch leaves the
output as it is, so its score 1 − f_a is the same constant on every black patch. The map
of the trained agent and the map of the randomised agent then share a block of tied
pixels. Whether that block raises the Spearman rank correlation over all pixels depends
on where it sits in each map: at the bottom of both (the zeros of a non-negative map), it
alone gives a high correlation; at the bottom of one map and in the middle of the other,
it gives almost none. In Breakout about two thirds of the screen is black in all four
stacked frames.

* :func:`tied_blocks`: per method and state, the share of pixels in each map's largest tie
  (its most frequent exact value) and in both, where each block sits among the other
  pixels, the Spearman similarity over all pixels (the sweep's) and outside the shared
  block, and what the shared block alone gives (:func:`tie_floor`).
* :func:`tied_block_test`, :func:`style_tied_block_test`: the pre-stated test of the claim
  "the failure comes from the black screen, not from the weights", per method, with its
  states, effective sample size and game.
* :func:`tied_block_summary`, :func:`style_tied_blocks`, :func:`tied_block_sentence`: the
  chapter's table and generated text; the text makes the claim only where the test supports it.
* :func:`study_tied_tables`, :func:`study_tied_block_tests`, :func:`study_tied_block_sentence`:
  the same test on the stored paper-scale study, per game, from the sweep's own Spearman
  similarity outside the shared block (``spearman_untied``), every state it explained.

The largest tie and the similarity outside the shared block are the library's
(:func:`~saliency_lib.metrics.similarity.largest_tie`,
:func:`~saliency_lib.metrics.similarity.spearman_untied`).

The maps use the sweep's models (:func:`~saliency_lib.metrics.randomised_models`, cascading,
Glorot, the chapter's seed), explainer parameters and states, so the similarity over all
pixels equals the sweep's value for the same state.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from saliency_book.common import ExplainedAgent, Note, load, method_names
from saliency_lib.explainers import method_label
from saliency_lib.metrics.similarity import largest_tie, spearman_untied
from saliency_lib.results import config_hash
from saliency_study.cache import cached_table
from saliency_study.evidence import MIN_STATES, TOO_FEW, enough_states, too_few

__all__ = ["tie_floor", "tied_blocks", "tied_block_test", "style_tied_block_test", "tied_block_summary",
           "style_tied_blocks", "tied_block_sentence", "study_tied_tables", "study_tied_block_tests",
           "study_tied_block_sentence", "CARRIED", "NOT_CARRIED"]

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


def tied_blocks(cfg, who: ExplainedAgent, methods: Sequence[str] | None = None, *, n_states: int = N_STATES
                ) -> pd.DataFrame | Note:
    """Tied blocks of the trained and the fully randomised agent's maps, per method and state.

    The table is stored under ``<results_dir>/sanity_tied_blocks-<hash>/`` (committed with
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
        in every frame), ``tied_trained, tied_random`` (share of each map at its most frequent
        value), ``shared`` (both at once), ``below_trained, below_random`` (share of each map's
        other pixels below its tied value), ``spearman`` (the sweep's similarity),
        ``spearman_outside`` (over the pixels outside the shared block) and ``tie_floor``.
    """
    import torch

    from saliency_book.ch3_sanity import model_at, sweep_specs
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


def style_tied_block_test(test: pd.DataFrame | Note, caption: str):
    """:func:`tied_block_test` as a captioned Styler (a Note passes through)."""
    if isinstance(test, Note):
        return test

    def ci(m, lo, hi):
        return f"{m:.2f} [{lo:.2f}, {hi:.2f}]" if np.isfinite(lo) and np.isfinite(hi) else (f"{m:.2f}" if np.isfinite(m) else "–")

    t = pd.DataFrame({
        "Method": test["method"].map(method_label), "States": test["n"], "ESS": test["n_eff"],
        "Spearman, all pixels": [ci(*r) for r in zip(test["spearman"], test["spearman_low"], test["spearman_high"])],
        "Spearman, outside the block": [ci(*r) for r in zip(test["outside"], test["outside_low"], test["outside_high"])],
        "Difference": [ci(*r) for r in zip(test["diff"], test["diff_low"], test["diff_high"])],
        "Verdict": test["verdict"]})
    return t.style.format({"ESS": "{:.1f}"}, na_rep="–").hide(axis="index").set_caption(caption)


def tied_block_summary(table: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Mean over the states per method, methods with the largest shared block first."""
    if isinstance(table, Note):
        return table
    cols = ["input_zero", "tied_trained", "tied_random", "shared", "below_trained", "below_random", "spearman",
            "spearman_outside", "tie_floor"]
    s = table.groupby("method", sort=False)[cols].mean()
    s.insert(0, "states", table.groupby("method", sort=False).size())
    return s.sort_values(["shared", "spearman"], ascending=False).reset_index()


def style_tied_blocks(summary: pd.DataFrame | Note, caption: str):
    """:func:`tied_block_summary` as a captioned Styler (a Note passes through)."""

    if isinstance(summary, Note):
        return summary
    t = summary.drop(columns="input_zero").assign(method=summary["method"].map(method_label)).rename(columns={
        "method": "Method", "states": "States", "tied_trained": "Tied, trained", "tied_random": "Tied, random",
        "shared": "Tied in both", "below_trained": "Below the tie, trained", "below_random": "Below the tie, random",
        "spearman": "Spearman, all pixels", "spearman_outside": "Spearman, outside the block",
        "tie_floor": "Spearman of the block alone"}).set_index("Method")
    pct = {c: "{:.0%}" for c in ("Tied, trained", "Tied, random", "Tied in both", "Below the tie, trained",
                                 "Below the tie, random")}
    num = {c: "{:.2f}" for c in ("Spearman, all pixels", "Spearman, outside the block", "Spearman of the block alone")}
    return t.style.format(pct | num, na_rep="–").set_caption(caption)


def tied_block_sentence(summary: pd.DataFrame | Note, title: str, *, test: pd.DataFrame | Note | None = None,
                        threshold: float = 0.5, min_shared: float = 0.05):
    """Markdown: which methods' similarity the shared tied block carries, formatted from the numbers.

    The shares and means of ``summary`` are described for every method with a shared block of
    at least ``min_shared``. That the block *carries* a method's failure is said only where
    ``test`` (:func:`tied_block_test`) finds it, with the states and game behind it; below
    :data:`~saliency_study.evidence.MIN_STATES` states the sentence says that they are too few,
    and without a test it claims nothing.
    """
    from IPython.display import Markdown

    if isinstance(summary, Note):
        return summary
    input_share = float(summary["input_zero"].mean())
    n = int(summary["states"].max())
    lead = (f"In the {n} states of the {title}, {input_share:.0%} of the pixel locations are zero in every stacked "
            "frame.")
    blocked = summary[summary["shared"] >= min_shared]
    if blocked.empty:
        return Markdown(lead + f" No method's trained and randomised maps share a tied block of {min_shared:.0%} "
                        "of the pixels or more, so ties do not inflate any Spearman similarity here.")
    parts = [f"**{method_label(r.method)}** ({r.shared:.0%} of the pixels; ρ = {r.spearman:.2f} over all pixels, "
             f"{r.spearman_outside:.2f} outside the block, {r.tie_floor:.2f} from the block alone)"
             for r in blocked.itertuples()]
    text = lead + " The trained and the fully randomised maps share a block of tied pixels for " + "; ".join(parts) + "."
    if test is None or isinstance(test, Note) or test.empty:
        return Markdown(text + " Whether the block carries any method's failure is not tested here.")
    t = test.set_index("method")
    verdict = blocked["method"].map(t["verdict"])
    few = blocked[verdict == TOO_FEW]
    if len(few):
        k = int(t.loc[few["method"], "n"].max())
        game = t["game"].dropna().iloc[0] if t["game"].notna().any() else None
        text += (f" On whether the block, and not the weights, carries the similarity of {method_names(few['method'])}, "
                 f"these are {too_few(k)} ({f'{game}; ' if game else ''}the test needs {MIN_STATES} states).")
    carried = blocked[verdict == CARRIED]
    for r in carried.itertuples():
        x = t.loc[r.method]
        where = f" of {x['game']}" if pd.notna(x["game"]) else ""
        text += (f" For {method_names([r.method])}, on {int(x['n'])} states{where} (effective sample size "
                 f"{x['n_eff']:.0f}), the similarity over all pixels reaches the threshold {threshold:.2f} only through "
                 f"the block: {x['spearman']:.2f} [{x['spearman_low']:.2f}, {x['spearman_high']:.2f}] over all pixels "
                 f"against {x['outside']:.2f} [{x['outside_low']:.2f}, {x['outside_high']:.2f}] outside it. This map "
                 "does depend on the weights where the block does not reach; the test, as Huber et al. run it, "
                 "cannot see that.")
    tested = blocked[verdict == NOT_CARRIED]
    failing = tested[tested["spearman"] >= threshold]
    if len(failing):
        text += (f" For {method_names(failing['method'])} the test does not find that the block carries the "
                 "similarity, so its failure stands.")
    harmless = tested[tested["tie_floor"] < threshold]
    if len(harmless):
        why = [f"**{method_label(r.method)}** (ρ = {r.tie_floor:.2f}; {_why_small(r)})" for r in harmless.itertuples()]
        text += (f" For {', '.join(why[:-1]) + ' and ' + why[-1] if len(why) > 1 else why[0]}, the block alone "
                 f"stays below the threshold {threshold:.2f}.")
    return Markdown(text)


def _why_small(r) -> str:
    """Why a tied block alone gives a low ρ: its tie sits away from both ends of a ranking, or it is small.

    The similarity ignores the sign of a map, so a tie at either end of both rankings counts."""
    mid = [name for name, b in (("trained", r.below_trained), ("random", r.below_random)) if 0.1 < b < 0.9]
    if mid:
        return f"the tie sits away from both ends of the {' and the '.join(mid)} map{'s' if len(mid) > 1 else ''}"
    return f"the block covers only {r.shared:.0%} of the pixels"


def study_tied_tables(rows: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per game, the input of :func:`tied_block_test` from the study's stored sanity rows.

    ``rows``: the sweep's sanity rows (:func:`~saliency_book.ch3_paper.sanity_rows` with the
    measures ``spearman`` and ``spearman_untied``). At each game's deepest level (every layer
    randomised), per method and state: ``spearman`` and ``spearman_outside`` (the sweep's
    ``spearman_untied``). States whose units were stored before the sweep measured
    ``spearman_untied`` have no such row and are left out; a game without any is left out.
    """
    out: dict[str, pd.DataFrame] = {}
    if rows.empty:
        return out
    for game, g in rows.groupby("game", sort=False):
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


def study_tied_block_sentence(tests: pd.DataFrame | Note, *, threshold: float = 0.5):
    """Markdown: per game, the methods whose failure the shared block carries, with the states behind it.

    Formatted from :func:`study_tied_block_tests` only: "carried by the block" is said of a
    method only where the pre-stated test finds it; a game below
    :data:`~saliency_study.evidence.MIN_STATES` states gets "too few states".
    """
    from IPython.display import Markdown

    if isinstance(tests, Note):
        return tests
    parts = []
    for game, g in tests.groupby("game", sort=False):
        n = int(g["n"].max())
        if not enough_states(n):
            parts.append(f"On {game}, the stored states are {too_few(n)} (the test needs {MIN_STATES}).")
            continue
        g = g[g["n"].map(enough_states)]  # a method still below the bar is not judged
        carried = g[g["verdict"] == CARRIED]
        failing = g[(g["verdict"] == NOT_CARRIED) & (g["spearman_low"] >= threshold)]
        n_lo = int(g["n"].min())
        text = f"On {game} ({n} states" if n_lo == n else f"On {game} ({n_lo} to {n} states"
        lo, hi = g["n_eff"].min(), g["n_eff"].max()
        if pd.isna(lo):
            text += ")"
        else:
            text += f", effective sample size {lo:.0f})" if round(lo) == round(hi) else f", effective sample size {lo:.0f} to {hi:.0f})"
        if len(carried):
            its = "its" if len(carried) == 1 else "their"
            text += (f", the shared block carries the failure of {method_names(carried['method'])}: over all pixels "
                     f"{its} similarity after full randomisation reaches τ = {threshold:.2f}, outside the block it "
                     "stays below, and the paired difference is positive")
        else:
            text += ", the shared block carries no method's failure"
        if len(failing):
            text += f"; {method_names(failing['method'])} fail{'s' if len(failing) == 1 else ''} outside the block as well"
        parts.append(text + ".")
    return Markdown(" ".join(parts))

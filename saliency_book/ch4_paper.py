"""Chapter 4: Huber et al.'s insertion AUCs beside ours for every game, and why the state value V is not ranked.

* :func:`insertion_aucs`: per-state insertion AUCs of the study's DQN agents on every game
  the store holds (computing nothing).
* :func:`per_game`, :func:`pooled`: the paper's mean AUC beside ours per game (block-bootstrap
  CI, n, effective sample size, verdict) and pooled over the games (99 % CI, as the paper).
* :func:`per_game_sentence`: the verdicts counted per game, in words.
* :func:`stored_agreement`, :func:`study_agreement`: the rank agreement with the paper's order
  of the methods on the stored paper-scale study of one game.
* :func:`mean_curve_table`, :func:`measure_degeneracy`, :func:`style_degeneracy`,
  :func:`degeneracy_sentence`: whether a measure's substrate moves it, read off the stored
  mean curves; the check behind
  :data:`saliency_study.evidence.DEGENERATE_MEASURES`.
* :func:`random_map_precedent`: where our random map comes first, whether the paper's table
  for the game already has it first.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    DegradationChapter,
    agent_label,
    auc_summary,
    measure_label,
    notes_pass,
    short_label,
)
from saliency_book.ch4_rankings import rank_agreement, side_by_side
from saliency_book.common import Note, join_words
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_STATES, enough_states, too_few
from saliency_study.paper import (
    GAME_LABELS,
    GAME_ORDER,
    NOT_RUN,
    compare_per_game,
    compare_pooled,
    paper_insertion,
    pooled_game_labels,
    stored_rows,
    style_comparison,
    verdict_counts,
)

__all__ = ["insertion_aucs", "per_game", "pooled", "per_game_sentence", "stored_agreement", "study_agreement",
           "style_per_game", "style_pooled", "mean_curve_table", "summary_curves", "measure_degeneracy", "style_degeneracy", "degeneracy_sentence", "random_map_precedent",
           "KEYS", "CURVE_COLUMNS"]

KEYS = ("substrate", "measure", "method")
"""The columns of one insertion setting of the paper's tables."""
_LABELS = {"columns": {"substrate": "Substrate", "measure": "Measure", "method": "Method"},
           "measure": {"q_ratio": "Q-ratio", "advantage": "advantage"}}


def insertion_aucs(cfg: DegradationChapter, games=GAME_ORDER) -> pd.DataFrame:
    """Per-state insertion AUCs (``<measure>_auc``, the paper's plain mean) of the study's DQN agents.

    Only the paper's settings: black and random substrate, Q-ratio and advantage, the paper's
    methods. Read from the packs (the committed units) of ``cfg.study_profile`` for every game
    of ``games``; a game the study has not run has no rows. Columns ``agent, game, substrate, measure`` (without ``_auc``), ``method``,
    ``state``, ``value``.
    """
    t = stored_rows(cfg.study_profile, games, experiments=("insertion", "deletion"), preset="dqn", seed=cfg.seed,
                    results_dir=cfg.results_dir, packed_only=True)
    t = t[(t["experiment"] == "insertion") & t["step"].isna() & t["measure"].isin(["q_ratio_auc", "advantage_auc"])]
    t = t[t["substrate"].isin(PAPER_SUBSTRATES) & t["method"].isin(PAPER_METHODS)]
    t = t.assign(measure=t["measure"].str.removesuffix("_auc"))
    return t[["agent", "game", "substrate", "measure", "method", "state", "value"]].reset_index(drop=True)


def stored_agreement(rows: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """:func:`~saliency_book.ch4_rankings.rank_agreement` of the study's stored insertion ``rows`` on ``game``.

    ``rows``: per-state rows of the study's DQN agents (:func:`saliency_study.paper.stored_rows`,
    any games and experiments); the means of every state they hold of ``game``, whatever their
    number (the agreement's ``n`` column says it). A Note when they hold no insertion row of
    the game.
    """
    t = rows[(rows["game"] == game) & (rows["experiment"] == "insertion")] if len(rows) else rows
    if t.empty:
        return Note(f"The paper-scale study has no insertion units of {game} yet.", title=NOT_RUN.capitalize())
    side = side_by_side(auc_summary(t, n_resamples=1), game)  # the ranks of the means: no CI needed
    return side if isinstance(side, Note) else rank_agreement(side)


def study_agreement(cfg: DegradationChapter, game: str) -> pd.DataFrame | Note:
    """:func:`stored_agreement` of the packs of ``cfg.study_profile`` (computing nothing); a Note below
    :data:`~saliency_study.evidence.MIN_STATES` states of a common method."""
    rows = stored_rows(cfg.study_profile, [game], experiments=("insertion", "deletion"), preset="dqn", seed=cfg.seed,
                       results_dir=cfg.results_dir, packed_only=True)
    agreement = stored_agreement(rows, game)
    if isinstance(agreement, Note) or enough_states(n := int(agreement["n"].min())):
        return agreement
    return Note(f"The paper-scale study has {too_few(n)} on {game} so far.", title="Too few states")


def _paper() -> pd.DataFrame:
    p = paper_insertion("main")
    return p[p["method"].isin(PAPER_METHODS)]


def per_game(aucs: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of the insertion AUCs: every game and setting of the paper.

    Rows in the paper's order (game, substrate, measure, method); ``verdict`` is
    ``"not yet run"`` where the study has no states of the game yet.
    """
    t = compare_per_game(aucs, _paper(), KEYS, confidence=confidence, n_resamples=n_resamples, seed=seed)
    order = {"substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}, "measure": {"q_ratio": 0, "advantage": 1},
             "method": {m: i for i, m in enumerate(PAPER_METHODS)}, "game": {g: i for i, g in enumerate(GAME_ORDER)}}
    return t.sort_values(["game", *KEYS], key=lambda c: c.map(order[c.name])).reset_index(drop=True)


def pooled(aucs: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` of the insertion AUCs over the games we have run (99 % CI)."""
    return compare_pooled(aucs, _paper(), KEYS, confidence=0.99, n_resamples=n_resamples, seed=seed)


def style_per_game(table: pd.DataFrame, game: str, *, confidence: float = 0.95):
    """One game's rows of :func:`per_game` as a captioned table."""
    t = table[table["game"] == game].assign(method=lambda d: d["method"].map(short_label))
    run = (t["verdict"] != NOT_RUN).any()
    caption = (f"{GAME_LABELS.get(game, game)}, insertion AUC: Huber et al.'s mean over 997 states beside our DQN "
               f"agent's mean, its {int(confidence * 100)} % moving-block bootstrap CI, the states and their effective "
               f"number (ESS). Verdict: consistent when the paper's mean lies in our CI; a verdict needs "
               f"{MIN_STATES} states." if run else
               f"{GAME_LABELS.get(game, game)}, insertion AUC: Huber et al.'s mean over 997 states; the study has not run "
               "this game yet.")
    return style_comparison(t, _LABELS, caption, digits=3)


def style_pooled(table: pd.DataFrame):
    """:func:`pooled` as a captioned table."""
    if table.empty:
        return Note("The study has no insertion AUCs of a DQN agent yet.", title="No results")
    games = join_words(pooled_game_labels(table))
    caption = (f"Insertion AUC pooled over the games we have run ({games}), every state counting once as in Huber et "
               "al.'s pooled figures: their mean over the same games beside ours with a 99 % CI (moving blocks "
               "within each game, then combined), states and ESS.")
    return style_comparison(table.assign(method=table["method"].map(short_label)), _LABELS, caption, digits=3)


def per_game_sentence(table: pd.DataFrame):
    """The verdicts of :func:`per_game` counted per game (Markdown)."""
    from IPython.display import Markdown

    parts = []
    for game, g in table.groupby("game", sort=False):
        label = GAME_LABELS.get(game, game)
        if (g["verdict"] == NOT_RUN).all():
            parts.append(f"{label}: {NOT_RUN}")
        elif not enough_states(int(g["n"].max())):
            parts.append(f"{label}: {too_few(int(g['n'].max()))} ({len(g)} settings)")
        else:
            parts.append(f"{label} ({int(g['n'].max())} states): {verdict_counts(g)}")
    return Markdown("Per game, against Huber et al.'s insertion AUCs: " + "; ".join(parts) + ".")


# -- the state value V ------------------------------------------------------------------------------

def _clean_and_substrate(curves: pd.DataFrame, experiment: str) -> tuple[float, float]:
    """Mean of the measure on the clean state and on the substrate (the two ends of the path)."""
    first, last = curves.columns.min(), curves.columns.max()
    ends = curves[[first, last]].mean()
    return (float(ends[last]), float(ends[first])) if experiment == "insertion" else (float(ends[first]), float(ends[last]))


CURVE_COLUMNS = ("experiment", "agent", "method", "substrate", "measure", "step", "mean")
"""The columns :func:`measure_degeneracy` reads of a mean-curve table."""


def mean_curve_table(cfg: DegradationChapter, results: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Mean insertion/deletion curves (over the states) of the chapter's agents: :data:`CURVE_COLUMNS`.

    From the per-state curve rows of ``results`` where it holds them; otherwise from the store's
    pooled mean curves (:func:`saliency_study.cache.mean_curves`) of the chapter's
    stored units. Raw outputs (``q[0]``, ``logits[1]``) are left out. Computes nothing.
    """
    if isinstance(results, Note):
        return results
    rows = results[results["step"].notna() & results["experiment"].isin(["insertion", "deletion"])]
    if len(rows):
        t = rows.groupby(list(CURVE_COLUMNS[:-1]), observed=True)["value"].mean().rename("mean").reset_index()
    else:
        try:
            from saliency_lib.sweep import mean_curves
        except ImportError:
            return Note("The results hold no curves, and the store keeps no mean curves.", title="No curves")
        from saliency_study.paper import stored_units

        units = stored_units(cfg.profile, [cfg.game], experiments=("insertion", "deletion"), preset=None,
                             agents=list(dict.fromkeys(results["agent"])), seed=cfg.seed, results_dir=cfg.results_dir)
        t = mean_curves(units, results_dir=cfg.results_dir) if units else pd.DataFrame(columns=list(CURVE_COLUMNS))
    return summary_curves(t)


def summary_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """The rows of a mean-curve table that :func:`measure_degeneracy` reads: the summary measures
    (raw outputs such as ``q[0]`` or ``logits[1]`` left out), columns :data:`CURVE_COLUMNS`."""
    t = curves[~curves["measure"].astype(str).str.contains("[", regex=False)]
    return t[list(CURVE_COLUMNS)].reset_index(drop=True)


def measure_degeneracy(results: pd.DataFrame | Note, curves: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Does the substrate move the measure? One row per agent, substrate and measure.

    ``results`` gives the per-state AUCs (``<measure>_auc`` rows), ``curves`` the mean curves
    (:func:`mean_curve_table`). The pre-stated rule: a measure is **degenerate** on a substrate
    when the random map has the best mean AUC of all methods under insertion *and* the worst
    under deletion. Insertion and deletion reward a map for moving the measure from its
    substrate level to its clean level early (or late); a map that scores best both when it
    reveals and when it destroys pixels is rewarded for disturbing the image, not for its
    order. The columns beside say why:

    * ``clean``, ``substrate_value``: mean of the measure on the clean state and on the substrate;
    * ``gap_share``: ``|clean − substrate|`` over the largest swing of a method's mean curve
      along the path (near 0: the substrate leaves the measure where it was);
    * ``peak``: the largest value of a mean curve, over ``|clean|`` (how far half-revealed
      inputs overshoot);
    * ``random_insertion``, ``random_deletion``: the random map's rank by mean AUC (1: best;
      insertion: highest, deletion: lowest), of ``methods``;
    * ``n``: states (of the AUCs).

    Returns
    -------
    DataFrame or Note
        Columns ``agent, substrate, measure, n, clean, substrate_value, gap_share, peak,
        random_insertion, random_deletion, methods, degenerate``.
    """
    for x in (results, curves):
        if isinstance(x, Note):
            return x
    aucs = results[results["step"].isna() & results["measure"].str.endswith("_auc")]
    rows = []
    for (agent, sub, meas), g in curves.groupby(["agent", "substrate", "measure"], sort=False):
        mine = aucs[(aucs["agent"] == agent) & (aucs["substrate"] == sub) & (aucs["measure"] == f"{meas}_auc")]
        row = {"agent": agent, "substrate": sub, "measure": meas, "n": int(mine["state"].nunique())}
        swing = peak = 0.0
        for exp in ("insertion", "deletion"):
            e = g[g["experiment"] == exp]
            if e.empty:
                continue
            wide = e.pivot_table(index="method", columns="step", values="mean", aggfunc="mean")
            clean, substrate = _clean_and_substrate(wide, exp)
            row.setdefault("clean", clean)
            row.setdefault("substrate_value", substrate)
            swing = max(swing, float((wide.max(axis=1) - wide.min(axis=1)).max()))
            peak = max(peak, float(wide.max(axis=1).max()))
            a = mine[mine["experiment"] == exp].groupby("method")["value"].mean()
            if "random" in a.index:
                ranks = a.rank(ascending=exp == "deletion", method="min")
                row[f"random_{exp}"], row["methods"] = int(ranks["random"]), len(a)
        if "clean" not in row:
            continue
        row["gap_share"] = abs(row["clean"] - row["substrate_value"]) / swing if swing > 0 else np.nan
        row["peak"] = peak / abs(row["clean"]) if row["clean"] else np.nan
        m = row.get("methods")
        row["degenerate"] = bool(m and row.get("random_insertion") == 1 and row.get("random_deletion") == m)
        rows.append(row)
    if not rows:
        return Note("No insertion or deletion curves in the results.", title="No curves")
    cols = ["agent", "substrate", "measure", "n", "clean", "substrate_value", "gap_share", "peak", "random_insertion",
            "random_deletion", "methods", "degenerate"]
    return pd.DataFrame(rows).reindex(columns=cols)


@notes_pass
def style_degeneracy(table: pd.DataFrame, caption: str):
    """:func:`measure_degeneracy` as a captioned table; degenerate rows in bold."""
    t = pd.DataFrame({
        "Agent": table["agent"].map(agent_label), "Substrate": table["substrate"],
        "Measure": table["measure"].map(measure_label), "States": table["n"], "Clean": table["clean"],
        "Substrate value": table["substrate_value"], "Gap / swing": table["gap_share"], "Peak / clean": table["peak"],
        "Random map, insertion": [f"{r} of {m}" if pd.notna(r) else "–" for r, m in zip(table["random_insertion"],
                                                                                      table["methods"])],
        "Random map, deletion": [f"{r} of {m}" if pd.notna(r) else "–" for r, m in zip(table["random_deletion"],
                                                                                     table["methods"])],
        "Degenerate": table["degenerate"].map({True: "yes", False: "no"})})
    bold = ["font-weight: bold" if d else "" for d in table["degenerate"]]
    return (t.style.format({"Clean": "{:.2f}", "Substrate value": "{:.2f}", "Gap / swing": "{:.2f}",
                            "Peak / clean": "{:.1f}"}, na_rep="–")
            .apply(lambda _: bold, axis=0).hide(axis="index").set_caption(caption))


@notes_pass
def degeneracy_sentence(table: pd.DataFrame):
    """What :func:`measure_degeneracy` finds, and what the chapter does about it (Markdown)."""
    from IPython.display import Markdown

    out = []
    for meas, g in table.groupby("measure", sort=False):
        flagged = g[g["degenerate"]]
        agents = join_words([agent_label(a) for a in dict.fromkeys(g["agent"])])
        n = int(g["n"].min())
        if len(flagged):
            r = flagged.iloc[0]
            text = (f"The {measure_label(meas)} ({agents}) is degenerate on {len(flagged)} of {len(g)} substrates "
                    f"({join_words(list(flagged['substrate']))}): the random map has the best insertion AUC and the "
                    f"worst deletion AUC. On the {r['substrate']} substrate its mean is {r['substrate_value']:.2f}, "
                    f"against {r['clean']:.2f} on the clean state, while the mean curves climb to {r['peak']:.1f} times "
                    "the clean value along the path.")
        elif meas in DEGENERATE_MEASURES:
            text = f"The {measure_label(meas)} ({agents}) is not flagged on any of the {len(g)} substrates here."
        else:
            continue
        if not enough_states(n):
            text += f" This rests on {n} states: {too_few(n)} of its own."
        if meas in DEGENERATE_MEASURES:
            text += (" The chapter does not rank maps on it, whatever this check says for one agent: a normalised "
                     "measure (V − V on the substrate) / (V on the clean state − V on the substrate) would divide by "
                     "about zero, and a substrate that moves V would need a new sweep. Its curves and AUCs are shown, "
                     "but it has no bold best method, no ranking and no place in the comparison with the paper.")
        out.append(text)
    others = table[table["degenerate"] & ~table["measure"].isin(list(DEGENERATE_MEASURES))]
    if len(others):
        out.append("The check also flags " + join_words([f"the {measure_label(r.measure)} of {agent_label(r.agent)} on "
                                                         f"the {r.substrate} substrate" for r in others.itertuples()])
                   + "; its rankings there reward disturbance as much as order.")
    if not out:
        return Markdown("No measure is degenerate on any substrate here: the random map never has both the best "
                        "insertion and the worst deletion AUC.")
    return Markdown("\n\n".join(out))


# -- what the paper's own tables already show -------------------------------------------------------

@notes_pass
def random_map_precedent(summary: pd.DataFrame, game: str):
    """Where our random map has the best mean insertion AUC, whether Huber et al.'s table for ``game`` shows the same.

    Only the paper's settings (black and random insertion, Q-ratio and advantage) of agents
    whose measures are the paper's; ``summary`` is :func:`~saliency_book.ch4_degradation.auc_summary`.
    The comparison is over the methods both studies ran. Returns Markdown.
    """
    from IPython.display import Markdown

    if game not in GAME_LABELS:
        return Note(f"Huber et al. did not run {game}.", title="Not in the paper")
    p = _paper()
    p = p[p["game"] == game]
    s = summary[(summary["experiment"] == "insertion") & summary["substrate"].isin(PAPER_SUBSTRATES)
                & summary["measure"].isin(["q_ratio", "advantage"]) & summary["method"].isin(PAPER_METHODS)]
    ours, theirs, only_ours = [], [], []
    for (_, sub, meas), g in s.groupby(["agent", "substrate", "measure"], sort=False):
        q = p[(p["substrate"] == sub) & (p["measure"] == meas) & p["method"].isin(g["method"])].set_index("method")
        mine = g.set_index("method")["mean"].reindex(q.index)
        setting = f"{sub} insertion with the {measure_label(meas)}"
        if q.empty or "random" not in q.index:
            continue
        if q["mean"].idxmax() == "random":
            theirs.append(setting)
        if mine.idxmax() == "random":
            (ours if q["mean"].idxmax() == "random" else only_ours).append(f"{setting} ({int(g['n'].max())} states)")
    label = GAME_LABELS[game]
    text = []
    if ours:
        text.append(f"Our random map has the best mean insertion AUC of the common methods in {join_words(ours)}; "
                    f"Huber et al.'s own {label} table shows the same there, so this is their finding too, not a new one.")
    if only_ours:
        text.append(f"Our random map has the best mean in {join_words(only_ours)}, where Huber et al.'s {label} table "
                    "does not have it first.")
    if not ours and not only_ours:
        text.append(f"Our random map never has the best mean insertion AUC of the common methods on {label}"
                    + (f", while Huber et al.'s table has it first in {join_words(theirs)}." if theirs else ", nor in "
                       "Huber et al.'s table."))
    return Markdown(" ".join(text))

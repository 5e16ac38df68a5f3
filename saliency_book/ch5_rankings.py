"""Chapter 5: the masks next to the perturbation methods in the study's result table.

The rows come from :func:`saliency_study.study.study_results` (insertion, deletion and
the sanity check of the official and our Mask-A3C agents); nothing here scores a map.

* :class:`Criterion`, :data:`CRITERIA`: the ranking's columns.
* :func:`official_table`, :func:`our_rankings`, :func:`chapter_ranking`: the study's rows and
  the rankings of the official agent and of each of our shipped Mask-A3C agents.
* :func:`method_ranking`, :func:`ranking_display`, :func:`ranking_sentence`: every method's mean
  rank over the criteria, its display and the sentence on it.
* :func:`block_ranking`: the ranking of one agent on every criterion and substrate with the paired
  moving-block bootstrap, for states of one trajectory (the seed sweep's and the full study's).
* :func:`coarse_note`: the states and explainer parameters behind the Mask-A3C rows.

Functions that need a missing input return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from saliency_book.ch5_mask_attention import (
    MaskAttentionChapter,
    agent_label,
    mask_agents,
    not_trained_note,
    official_missing,
    shown_path,
)
from saliency_book.common import Note
from saliency_study.catalog import official_available
from saliency_study.evidence import DEGENERATE_MEASURES

__all__ = ["Criterion", "CRITERIA", "BLOCK_RANK_COLUMNS", "criterion_rows", "official_table", "our_rankings",
           "chapter_ranking", "method_ranking", "check_criteria", "block_ranking", "ranking_display", "ranking_sentence", "coarse_note"]


@dataclass(frozen=True)
class Criterion:
    """One column of the ranking: rows of one experiment and measure, and its direction."""

    key: str
    label: str
    experiment: str
    measure: str
    higher_is_better: bool


CRITERIA = tuple(c for c in (
    Criterion("ins_prob", "insertion AUC, π(a) ↑", "insertion", "prob_auc", True),
    Criterion("ins_value", "insertion AUC, V ↑", "insertion", "value_auc", True),
    Criterion("del_prob", "deletion AUC, π(a) ↓", "deletion", "prob_auc", False),
    Criterion("del_value", "deletion AUC, V ↓", "deletion", "value_auc", False),
    Criterion("sanity", "Spearman after full randomisation ↓", "sanity", "spearman", False),
) if c.measure.removesuffix("_auc") not in DEGENERATE_MEASURES)
"""The ranking's columns. Insertion: a faithful map restores the output fast (high AUC);
deletion: it destroys it fast (low AUC); sanity check: a map that depends on the
weights changes when all layers are re-drawn (low similarity to the original map). The
state value V is left out: it is degenerate under insertion and deletion
(:data:`saliency_study.evidence.DEGENERATE_MEASURES`, measured in chapter 4)."""


def official_table(cfg: MaskAttentionChapter) -> pd.DataFrame | Note:
    """The study's result table (:func:`~saliency_study.study.study_results`) of the official agent."""
    from saliency_study.study import study_results

    if not official_available(cfg.game):
        return official_missing(cfg.game)
    df = study_results(cfg.profile, cfg.game, executor=cfg.executor, results_dir=cfg.results_dir, agents=[cfg.official])
    return df[df["agent"] == cfg.official].reset_index(drop=True)


def our_rankings(cfg: MaskAttentionChapter) -> dict[str, pd.DataFrame] | Note:
    """:func:`method_ranking` of each of our shipped Mask-A3C agents of the game (label → ranking).

    Each agent gets the study's sweep for an actor-critic agent in ``cfg.profile``
    (:func:`~saliency_study.study.study_results`): its own greedy states, every method,
    its masks, the sanity check and insertion/deletion. Stored units are reused. The profile's
    ``ranked_own_agents`` caps how many agents are ranked, in name order (the ``tiny`` smoke
    profile ranks one).
    """
    from saliency_study.study import study_results

    agents = mask_agents(cfg.game, cfg.agents_dir)
    if agents.empty:
        return not_trained_note(cfg.game, cfg.agents_dir, "The ranking above is therefore of the official agent only.")
    cap = cfg.settings["ranked_own_agents"]
    agents = agents.sort_values("agent", kind="stable").head(len(agents) if cap is None else cap)
    out = {}
    for _, r in agents.iterrows():
        spec = shown_path(r["path"])
        df = study_results(cfg.profile, cfg.game, executor=cfg.executor, results_dir=cfg.results_dir, agents=[spec])
        out[agent_label(r)] = method_ranking(df[df["agent"] == spec], substrate=cfg.substrate)
    return out


def criterion_rows(table: pd.DataFrame, c: Criterion, substrate: str | None) -> pd.DataFrame:
    """The per-state rows of criterion ``c``: the AUC rows of one substrate, or the sanity rows of the
    deepest randomised layer (the full cascade)."""
    t = table[(table["experiment"] == c.experiment) & (table["measure"] == c.measure)]
    if c.experiment == "sanity":
        t = t[t["level"].notna()]
        return t[t["level"] == t["level"].max()] if len(t) else t
    return t[(t["substrate"] == substrate) & t["step"].isna()]


def method_ranking(table: pd.DataFrame, *, substrate: str = "black", criteria=CRITERIA) -> pd.DataFrame:
    """Rank every method of ``table`` (one agent) on each criterion with :func:`saliency_lib.metrics.ranking_table`.

    Returns
    -------
    DataFrame
        One row per (criterion, method): ``criterion``, ``label``, ``rank``, ``of``
        (methods ranked), ``method``, ``n``, ``mean``, ``std``, ``ci_low``, ``ci_high``
        (bootstrap CI of the mean over states), ``better_than``, ``worse_than`` (paired
        Wilcoxon, Holm-corrected), ``layer`` (the deepest randomised layer, sanity only).
    """
    from saliency_lib.metrics import ranking_table

    if table["agent"].nunique() > 1:
        raise ValueError(f"method_ranking needs the rows of one agent, got {sorted(table['agent'].unique())}")
    parts = []
    for c in criteria:
        rows = criterion_rows(table, c, substrate)
        if rows.empty:
            continue
        # the Wilcoxon test, which this chapter's generated text names; the block test suits one trajectory better
        r = ranking_table(rows, higher_is_better=c.higher_is_better, test="wilcoxon")
        r = r.assign(criterion=c.key, label=c.label, of=len(r),
                     layer=rows["layer"].iloc[0] if c.experiment == "sanity" else pd.NA)
        parts.append(r)
    if not parts:
        return pd.DataFrame(columns=["criterion", "label", "rank", "of", "method", "n", "mean", "std", "ci_low",
                                     "ci_high", "better_than", "worse_than", "layer"])
    return pd.concat(parts, ignore_index=True)


BLOCK_RANK_COLUMNS = ("criterion", "label", "substrate", "rank", "of", "method", "n", "n_eff", "mean", "std",
                      "ci_low", "ci_high", "better_than", "worse_than", "tied_with")
"""The columns of :func:`block_ranking`."""


def check_criteria(criteria) -> None:
    """Raise ``ValueError`` for a criterion that ranks on a degenerate measure (V;
    :data:`saliency_study.evidence.DEGENERATE_MEASURES`)."""
    for c in criteria:
        if c.measure.removesuffix("_auc") in DEGENERATE_MEASURES:
            raise ValueError(f"criterion {c.key!r} ranks on {c.measure!r}, a degenerate measure: "
                             f"{DEGENERATE_MEASURES[c.measure.removesuffix('_auc')]}")


def block_ranking(table: pd.DataFrame, *, criteria=CRITERIA, substrates=None, n_resamples: int = 2000,
                  seed: int = 0) -> pd.DataFrame:
    """Rank the methods of one agent on each criterion and substrate, for states of one trajectory.

    Each ranking is :func:`saliency_lib.metrics.ranking_table` with the paired moving-block
    bootstrap test: the states of one greedy game are correlated, so the CIs resample blocks of
    consecutive states and ``n_eff`` gives the effective sample size.

    Parameters
    ----------
    table : DataFrame
        Tidy rows of one agent.
    criteria : tuple of Criterion
        Default the chapter's; a criterion on a degenerate measure (V) raises ``ValueError``.
    substrates : sequence of str, optional
        Insertion/deletion substrates (default: those in ``table``); the sanity check has none.
    n_resamples, seed
        Of the block bootstrap.

    Returns
    -------
    DataFrame
        One row per (criterion, substrate, method), columns :data:`BLOCK_RANK_COLUMNS`
        (``substrate`` NA for the sanity check; ``of``: methods ranked).
    """
    from saliency_lib.metrics import ranking_table

    check_criteria(criteria)
    if table["agent"].nunique() > 1:
        raise ValueError(f"block_ranking needs the rows of one agent, got {sorted(table['agent'].unique())}")
    if substrates is None:
        substrates = sorted(s for s in table["substrate"].dropna().unique()) if "substrate" in table else []
    parts = []
    for c in criteria:
        for sub in ([pd.NA] if c.experiment == "sanity" else substrates):
            sel = criterion_rows(table, c, sub)
            if sel.empty:
                continue
            r = ranking_table(sel, higher_is_better=c.higher_is_better, test="block", n_resamples=n_resamples, seed=seed)
            parts.append(r.assign(criterion=c.key, label=c.label, substrate=sub, of=len(r)))
    if not parts:
        return pd.DataFrame(columns=list(BLOCK_RANK_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(BLOCK_RANK_COLUMNS)].astype({"rank": int, "of": int, "n": int})


def chapter_ranking(cfg: MaskAttentionChapter) -> pd.DataFrame | Note:
    """:func:`method_ranking` of the official agent's rows of the study's table (:func:`official_table`)."""
    table = official_table(cfg)
    if isinstance(table, Note):
        return table
    if table.empty:
        return Note(f"The study's `{cfg.profile}` table holds no rows for {cfg.official} yet.", title="No results")
    return method_ranking(table, substrate=cfg.substrate)


def ranking_display(ranking: pd.DataFrame) -> pd.DataFrame:
    """The ranking as a compact table: one row per method, one ``mean [CI] #rank`` cell per criterion."""
    from saliency_lib.explainers import METHOD_LABELS

    cells = {}
    for r in ranking.itertuples():
        ci = f" [{r.ci_low:.2f}, {r.ci_high:.2f}]" if np.isfinite(r.ci_low) else ""
        cells.setdefault(r.method, {})[r.label] = f"{r.mean:.2f}{ci} #{r.rank}"
    labels = list(dict.fromkeys(ranking["label"]))
    first = ranking[ranking["label"] == labels[0]].sort_values("rank")["method"].tolist() if labels else []
    order = first + [m for m in cells if m not in first]
    t = pd.DataFrame([{"method": METHOD_LABELS.get(m, m), **cells[m]} for m in order], columns=["method", *labels])
    return t.fillna("–")


def _list(names: str) -> str:
    from saliency_lib.explainers import METHOD_LABELS

    items = [METHOD_LABELS.get(n.strip(), n.strip()) for n in names.split(",") if n.strip()]
    return ", ".join(items)


def _hopeless(ranking: pd.DataFrame, alpha: float = 0.05) -> bool:
    """No criterion's paired Wilcoxon test can reach ``alpha`` after Holm, whatever the data: the
    smallest exact two-sided p-value with n pairs is 2 / 2ⁿ, and Holm multiplies the smallest by
    the number of pairs."""
    for _, r in ranking.groupby("criterion", sort=False):
        k, n = len(r), int(r["n"].min())
        if (k * (k - 1) // 2) * 2.0 / 2.0 ** n < alpha:
            return False
    return True


def ranking_sentence(ranking: pd.DataFrame | Note):
    """Markdown sentences on where the two masks rank, generated from :func:`method_ranking` (None for a Note)."""
    from IPython.display import Markdown

    from saliency_lib.explainers import METHOD_LABELS

    if isinstance(ranking, Note):
        return None
    if ranking.empty:
        return Markdown("The study's table holds no rows for these criteria yet.")
    parts = []
    for m in ("mask_policy", "mask_value"):
        mine = ranking[ranking["method"] == m]
        if mine.empty:
            continue
        ranks = "; ".join(f"#{r.rank} of {r.of} on {r.label.rstrip(' ↑↓')} ({r.mean:.2f})" for r in mine.itertuples())
        parts.append(f"The **{METHOD_LABELS[m].lower()}** ranks {ranks}.")
        better = {r.label.rstrip(" ↑↓"): _list(r.better_than) for r in mine.itertuples() if r.better_than}
        worse = {r.label.rstrip(" ↑↓"): _list(r.worse_than) for r in mine.itertuples() if r.worse_than}
        if better or worse:
            sig = [f"better than {v} on {k}" for k, v in better.items()] + [f"worse than {v} on {k}" for k, v in worse.items()]
            parts.append("Paired Wilcoxon tests over the states (Holm-corrected, α = 0.05) find it " + "; ".join(sig) + ".")
        else:
            parts.append("No paired Wilcoxon test over the states (Holm-corrected, α = 0.05) separates it from "
                         "any other method on any criterion.")
            if _hopeless(ranking):
                n = int(ranking["n"].min())
                parts.append(f"None could: with {n} states the smallest two-sided p-value is 2/2^{n} = {2 / 2 ** n:.3g} "
                             "before the Holm correction multiplies it.")
    n = int(ranking["n"].max())
    parts.append(f"Each mean is over at most {n} state{'s' if n != 1 else ''}; with so few states the "
                 "confidence intervals are wide and ranks can change with more states." if n < 20 else
                 f"Each mean is over at most {n} states.")
    return Markdown(" ".join(parts))


def coarse_note(profile: str):
    """Markdown: how many states the Mask-A3C rows have and which coarse explainer parameters they use."""
    from IPython.display import Markdown

    from saliency_book.common import describe_params
    from saliency_study.profiles import sweep_sizes

    n, _, params = sweep_sizes(profile, "mask_a3c")
    text = f"In the `{profile}` profile the study explains the first {n} states of the official agent's greedy game"
    if params:
        p = describe_params(params)
        text += (f", and because a Mask-A3C forward pass costs many DQN forward passes, its perturbation methods run "
                 f"with coarser parameters than the paper's: {p}. The numbers below are therefore not the "
                 "full profile's.")
    else:
        text += " with the paper's parameters."
    return Markdown(text)

"""Methods ranked on one agent's states, and whether the masks' ranks hold across training seeds.

* :func:`rank_methods` ranks one agent's methods on each :data:`CRITERIA` column and substrate; the
  state value V is never ranked (:data:`saliency_study.evidence.DEGENERATE_MEASURES`);
  :func:`rank_agents` ranks every agent of a table;
* :func:`profile_ranking`: one agent on the study's table of a profile (computed where missing);
* :func:`packed_rows`, :func:`official_rows`, :func:`seed_rows`: the packed (committed) units of the full
  study of an official agent and of the seed sweep of our Mask-A3C agents, computing nothing;
* :func:`kendall_w`, :func:`rank_agreement`: whether each mask ranks the same in every seed of its variant;
* :func:`ranking_numbers`, :func:`seed_numbers`: the numbers chapter 5 quotes.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from saliency_lib.agents.official import OFFICIAL_GAMES

from .evidence import DEGENERATE_MEASURES, TOO_FEW, enough_states
from .paper import GAME_ORDER
from .paths import AGENTS_DIR, RESULTS_DIR

__all__ = ["MASKS", "STUDY_GAMES", "ONE_SEED", "HOLDS", "DOES_NOT_HOLD", "Criterion", "CRITERIA", "RANK_COLUMNS",
           "AGREEMENT_COLUMNS", "criterion_rows", "check_criteria", "rank_methods", "rank_agents", "profile_ranking",
           "Packed", "packed_rows", "official_rows", "seed_rows", "kendall_w", "rank_agreement", "ranking_numbers",
           "seed_numbers"]

MASKS = ("mask_policy", "mask_value")
STUDY_GAMES = tuple(g for g in GAME_ORDER if g in OFFICIAL_GAMES)
"""The games of the study with an official Mask-A3C agent, in the paper's order."""
ONE_SEED, HOLDS, DOES_NOT_HOLD = "one seed", "holds", "does not hold"
"""Verdicts of :func:`rank_agreement` (besides :data:`~saliency_study.evidence.TOO_FEW`)."""
_EXPERIMENTS = ("sanity", "insertion", "deletion")
_AGENT = re.compile(r"-(?P<variant>none|policy|value|double)-s(?P<seed>\d+)$")


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
"""The ranking's columns. Insertion: a faithful map restores the output fast (high AUC); deletion: it
destroys it fast (low AUC); sanity check: a map that depends on the weights changes when all layers are
re-drawn (low similarity to the original map). V is left out: degenerate under insertion and deletion."""

RANK_COLUMNS = ("game", "agent", "criterion", "label", "substrate", "rank", "of", "method", "n", "n_eff", "mean", "std",
                "ci_low", "ci_high", "better_than", "worse_than", "tied_with")
"""The columns of :func:`rank_methods` (:func:`rank_agents` adds ``variant`` and ``seed``)."""


def criterion_rows(table: pd.DataFrame, c: Criterion, substrate) -> pd.DataFrame:
    """The per-state rows of criterion ``c``: the AUC rows of one substrate, or the sanity rows of the
    deepest randomised layer (the full cascade)."""
    t = table[(table["experiment"] == c.experiment) & (table["measure"] == c.measure)]
    if c.experiment == "sanity":
        t = t[t["level"].notna()]
        return t[t["level"] == t["level"].max()] if len(t) else t
    return t[(t["substrate"] == substrate) & t["step"].isna()]


def check_criteria(criteria) -> None:
    """Raise ``ValueError`` for a criterion that ranks on a degenerate measure (V)."""
    for c in criteria:
        if c.measure.removesuffix("_auc") in DEGENERATE_MEASURES:
            raise ValueError(f"criterion {c.key!r} ranks on {c.measure!r}, a degenerate measure: "
                             f"{DEGENERATE_MEASURES[c.measure.removesuffix('_auc')]}")


def rank_methods(table: pd.DataFrame, *, criteria=CRITERIA, substrates=None, test: str = "block",
                 n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Rank the methods of one agent on each criterion and substrate (:func:`saliency_lib.metrics.ranking_table`).

    Parameters
    ----------
    table : DataFrame
        Tidy rows of one agent.
    criteria : tuple of Criterion
        Default the chapter's; a criterion on a degenerate measure (V) raises ``ValueError``.
    substrates : sequence of str, optional
        Insertion/deletion substrates (default: those in ``table``); the sanity check has none.
    test : {"block", "wilcoxon"}
        The paired test: the moving-block bootstrap for the states of one trajectory (correlated; ``n_eff``
        is their effective number), or Wilcoxon's signed-rank test, which the profile's ranking uses.
    n_resamples, seed
        Of the bootstrap.

    Returns
    -------
    DataFrame
        One row per (criterion, substrate, method), best first, columns :data:`RANK_COLUMNS` (``substrate``
        NA for the sanity check; ``of``: methods ranked).
    """
    from saliency_lib.metrics import ranking_table

    check_criteria(criteria)
    if table["agent"].nunique() > 1:
        raise ValueError(f"rank_methods needs the rows of one agent, got {sorted(table['agent'].unique())}")
    if substrates is None:
        substrates = sorted(table["substrate"].dropna().unique()) if "substrate" in table else []
    parts = []
    for c in criteria:
        for sub in ([pd.NA] if c.experiment == "sanity" else substrates):
            sel = criterion_rows(table, c, sub)
            if len(sel):
                r = ranking_table(sel, higher_is_better=c.higher_is_better, test=test, n_resamples=n_resamples, seed=seed)
                parts.append(r.assign(game=sel["game"].iloc[0], agent=sel["agent"].iloc[0], criterion=c.key,
                                      label=c.label, substrate=sub, of=len(r)))
    if not parts:
        return pd.DataFrame(columns=list(RANK_COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(RANK_COLUMNS)].astype({"rank": int, "of": int, "n": int})


def rank_agents(rows: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`rank_methods` (block test) of every agent of ``rows``, with ``variant`` and ``seed`` read from
    names such as ``a3c-Breakout-double-s1`` (NA otherwise); ``attrs`` are kept."""
    parts = []
    for agent, table in rows.groupby("agent", sort=True):
        m = _AGENT.search(Path(str(agent)).name)
        r = rank_methods(table, n_resamples=n_resamples, seed=seed)
        parts.append(r.assign(variant=m["variant"] if m else pd.NA, seed=int(m["seed"]) if m else pd.NA))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=[*RANK_COLUMNS, "variant", "seed"])
    out.attrs.update(rows.attrs)
    return out


def profile_ranking(profile: str, game: str, agent: str, *, substrate: str, executor: str = "local",
                    results_dir: str | os.PathLike = RESULTS_DIR) -> pd.DataFrame:
    """``agent``'s methods ranked (Wilcoxon tests, one ``substrate``) on the study's table of ``profile``, whose
    missing units are computed (empty when the table holds no row of the agent)."""
    from .study import study_results

    df = study_results(profile, game, executor=executor, results_dir=results_dir, agents=[agent])
    df = df[df["agent"] == agent]
    return pd.DataFrame(columns=list(RANK_COLUMNS)) if df.empty else rank_methods(df, substrates=[substrate], test="wilcoxon")


# -- packed sweeps: the full study and the seed sweep --------------------------------------------

class Packed(NamedTuple):
    """The rows of the packed units of some sweeps (None when none is packed), and how many units are packed
    and planned."""

    rows: pd.DataFrame | None
    stored: int
    planned: int

    @property
    def complete(self) -> bool:
        """Every planned unit is packed (and there is one)."""
        return self.rows is not None and self.stored == self.planned


def packed_rows(specs, results_dir: str | os.PathLike = RESULTS_DIR) -> Packed:
    """The rows (sanity, insertion, deletion) of the packed (committed) units of ``specs``, computing nothing.
    Loose units of a run in progress are left out, so the result is what a clean clone gives; the rows'
    ``attrs`` hold ``units_stored`` and ``units_planned``."""
    from saliency_lib.sweep import load_units, packed_keys, plan_units

    planned = [u for s in specs for u in plan_units(s, results_dir=results_dir, states=False)[0]]
    keys = packed_keys(planned, results_dir=results_dir)
    stored = [u for u in planned if u.key in keys]
    rows = load_units(stored, results_dir=results_dir) if stored else None
    if rows is not None:
        rows = rows[rows["experiment"].isin(_EXPERIMENTS)].reset_index(drop=True)
        rows.attrs.update(units_stored=len(stored), units_planned=len(planned))
    return Packed(rows, len(stored), len(planned))


def official_rows(profile: str, game: str, *, results_dir: str | os.PathLike = RESULTS_DIR) -> Packed:
    """:func:`packed_rows` of the official agent of ``game`` in the study of ``profile`` (the checkpoints must be
    present to plan its units)."""
    from .study import profile_specs

    specs = [dataclasses.replace(s, experiments=_EXPERIMENTS)
             for s in profile_specs(profile, game, agents=[f"official:{game}"], results_dir=results_dir)]
    return packed_rows(specs, results_dir)


def seed_rows(profile: str = "full", game: str = "Breakout", *, results_dir: str | os.PathLike = RESULTS_DIR,
              agents_dir: str | os.PathLike = AGENTS_DIR) -> tuple[Packed, int]:
    """:func:`packed_rows` of the seed sweep of ``game`` (:func:`~saliency_study.study.seed_specs`) and the number
    of its agents (0: no masked agent is shipped)."""
    from .study import seed_specs

    specs = seed_specs(profile, game, agents_dir=agents_dir)
    return (packed_rows(specs, results_dir) if specs else Packed(None, 0, 0)), len(specs)


def kendall_w(ranks) -> float:
    """Kendall's coefficient of concordance W of ``ranks`` (raters × items), corrected for ties.

    1: every rater (seed) orders the items (methods) alike; 0: no agreement. NaN for fewer than 2 raters
    or 2 items.
    """
    from scipy.stats import rankdata

    r = np.asarray(ranks, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] < 2 or r.shape[1] < 2:
        return float("nan")
    m, k = r.shape
    r = np.vstack([rankdata(row) for row in r])  # ties get mid-ranks
    s = float(((r.sum(axis=0) - m * (k + 1) / 2) ** 2).sum())
    ties = sum(float((c ** 3 - c).sum()) for c in (np.unique(row, return_counts=True)[1] for row in r))
    denom = m ** 2 * (k ** 3 - k) - m * ties
    return float(12 * s / denom) if denom > 0 else float("nan")


AGREEMENT_COLUMNS = ("game", "variant", "criterion", "label", "substrate", "method", "seeds", "n_seeds", "ranks",
                     "better_than", "worse_than", "of", "min_rank", "max_rank", "rank_range", "n", "kendall_w", "verdict")


def rank_agreement(ranking: pd.DataFrame, *, methods=MASKS) -> pd.DataFrame:
    """Whether each mask ranks the same in every seed of its variant, per criterion and substrate.

    Seeds are compared within one variant (a policy-only agent ranks among fewer methods than one with both).
    A ``ranking`` that is not a DataFrame (the reason there is none) is returned as it is.

    Returns
    -------
    DataFrame
        One row per (variant, criterion, substrate, method), columns :data:`AGREEMENT_COLUMNS`: ``seeds``,
        ``ranks``, ``better_than``, ``worse_than`` (lists in seed order), ``n_seeds``, ``of``, ``min_rank``,
        ``max_rank``, ``rank_range``, ``n`` (fewest states of any method in any seed), ``kendall_w`` (over the
        methods every seed ranked) and ``verdict``: :data:`ONE_SEED`, :data:`~saliency_study.evidence.TOO_FEW`,
        :data:`HOLDS` (the same rank in every seed) or :data:`DOES_NOT_HOLD`.
    """
    if not isinstance(ranking, pd.DataFrame):
        return ranking
    rows = []
    key = ["game", "variant", "criterion", "label", "substrate"]
    for (game, variant, crit, label, sub), g in ranking.groupby(key, sort=False, dropna=False):
        seeds = sorted(g["seed"].unique())
        # Kendall's W on the methods that every seed ranked, re-ranked among themselves by their means
        common = set.intersection(*(set(g.loc[g["seed"] == s, "method"]) for s in seeds))
        wide = g[g["method"].isin(common)].pivot(index="seed", columns="method", values="rank").loc[seeds]
        w = kendall_w(wide.to_numpy()) if len(common) > 1 else float("nan")
        n = int(g["n"].min())
        for m in methods:
            mine = g[g["method"] == m].set_index("seed")
            if mine.empty:
                continue
            have = [int(s) for s in seeds if s in mine.index]
            ranks = [int(mine.loc[s, "rank"]) for s in have]
            verdict = (ONE_SEED if len(have) < 2 else TOO_FEW if not enough_states(n) else
                       HOLDS if max(ranks) == min(ranks) else DOES_NOT_HOLD)
            rows.append({"game": game, "variant": variant, "criterion": crit, "label": label, "substrate": sub,
                         "method": m, "seeds": have, "n_seeds": len(have), "ranks": ranks,
                         "better_than": [str(mine.loc[s, "better_than"]) for s in have],
                         "worse_than": [str(mine.loc[s, "worse_than"]) for s in have], "of": int(mine["of"].max()),
                         "min_rank": min(ranks), "max_rank": max(ranks), "rank_range": max(ranks) - min(ranks), "n": n,
                         "kendall_w": w, "verdict": verdict})
    return pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))


# -- the numbers chapter 5 quotes ---------------------------------------------------------------------

def ranking_numbers(ranking) -> dict:
    """``rank_states``: the most states behind a mean of ``ranking``; ``rank_min_p``: the smallest exact
    two-sided p-value a paired Wilcoxon test can reach with that many pairs, 2 / 2ⁿ (NaN without a ranking)."""
    n = float("nan") if not isinstance(ranking, pd.DataFrame) or ranking.empty else int(ranking["n"].max())
    return {"rank_states": n, "rank_min_p": 2.0 / 2.0 ** n}


def seed_numbers(ranking, agreement) -> dict:
    """The seed sweep's size and its verdicts: ``seed_units_stored``, ``seed_units_planned``, ``seed_states``
    (most states per seed), ``seed_holds``, ``seed_moves`` (criteria where a mask's rank holds, does not hold
    across the seeds; NaN unless both are tables)."""
    if not isinstance(ranking, pd.DataFrame) or not isinstance(agreement, pd.DataFrame):
        return dict.fromkeys(["seed_units_stored", "seed_units_planned", "seed_states", "seed_holds", "seed_moves"],
                             float("nan"))
    v = agreement["verdict"]
    return {"seed_units_stored": int(ranking.attrs.get("units_stored", 0)),
            "seed_units_planned": int(ranking.attrs.get("units_planned", 0)),
            "seed_states": int(ranking["n"].max()) if len(ranking) else 0,
            "seed_holds": int((v == HOLDS).sum()), "seed_moves": int((v == DOES_NOT_HOLD).sum())}

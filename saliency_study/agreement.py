"""Insertion against Huber et al.: their method order beside ours, the two factors, and the per-game AUCs.

* :func:`side_by_side`, :func:`rank_agreement`, :func:`agreement_counts`: the paper's order of the
  methods' mean AUCs against ours, per setting, and how many settings agree significantly (none
  whose means rest on fewer than :data:`~saliency_study.evidence.MIN_ESS` effective states);
* :func:`stored_agreement`, :func:`study_agreement`: the same on the stored paper-scale study;
* :func:`factors`, :func:`paper_factor_counts`: the paper's two factors (what is explained, the
  substrate) in its tables and for our agents;
* :func:`insertion_aucs`, :func:`per_game`, :func:`pooled`: the paper's AUCs beside the stored
  study's, with equivalence verdicts (:mod:`saliency_study.paper`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from saliency_study import paper as huber
from saliency_study.degradation import (
    MEASURE_ROLE,
    PAPER_ANALOGUE,
    PAPER_AUC,
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    auc_summary,
    best_non_random,
)
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_ESS
from saliency_study.paths import RESULTS_DIR

__all__ = ["KEYS", "side_by_side", "rank_agreement", "agreement_counts", "stored_agreement", "study_agreement",
           "factors", "paper_factor_counts", "insertion_aucs", "per_game", "pooled"]

KEYS = ("substrate", "measure", "method")
"""The columns of one insertion setting of the paper's tables."""


# -- method orders ----------------------------------------------------------------------------------

def side_by_side(summary: pd.DataFrame, game: str) -> pd.DataFrame:
    """The paper's insertion AUCs of ``game`` next to ours (:func:`~saliency_study.degradation.auc_summary`),
    for the methods both have: one row per (agent, substrate, paper measure, method) with ``our_measure,
    paper_mean, paper_std, our_mean, our_std, n, n_eff, paper_rank, our_rank`` (1: highest among the common
    methods). Empty for a game the paper did not run."""
    cols = ["agent", "substrate", "paper_measure", "our_measure", "method", "paper_mean", "paper_std", "our_mean",
            "our_std", "n", "n_eff", "paper_rank", "our_rank"]
    if game not in set(PAPER_AUC["game"]):
        return pd.DataFrame(columns=cols)
    ours = summary[(summary["experiment"] == "insertion") & summary["substrate"].isin(PAPER_SUBSTRATES)
                   & summary["method"].isin(PAPER_METHODS) & ~summary["measure"].isin(list(DEGENERATE_MEASURES))]
    ours = ours.assign(paper_measure=ours["measure"].map(PAPER_ANALOGUE)).dropna(subset=["paper_measure"])
    m = ours.merge(PAPER_AUC[PAPER_AUC["game"] == game], left_on=["substrate", "paper_measure", "method"],
                   right_on=["substrate", "measure", "method"], suffixes=("_ours", "_paper"))
    out = pd.DataFrame({
        "agent": m["agent"], "substrate": m["substrate"], "paper_measure": m["paper_measure"],
        "our_measure": m["measure_ours"], "method": m["method"], "paper_mean": m["mean_paper"],
        "paper_std": m["std_paper"], "our_mean": m["mean_ours"], "our_std": m["std_ours"], "n": m["n_ours"],
        "n_eff": m["n_eff"]})
    key = ["agent", "substrate", "paper_measure"]
    out["paper_rank"] = out.groupby(key)["paper_mean"].rank(ascending=False, method="min").astype(int)
    out["our_rank"] = out.groupby(key)["our_mean"].rank(ascending=False, method="min").astype("Int64")
    order = {"method": {m: i for i, m in enumerate(PAPER_METHODS)}, "paper_measure": {"q_ratio": 0, "advantage": 1},
             "substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}}
    agents = {a: i for i, a in enumerate(dict.fromkeys(out["agent"]))}
    return out.sort_values(key + ["method"], key=lambda c: c.map(order.get(c.name, agents))).reset_index(drop=True)


def rank_agreement(side: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ and Kendall τ between the paper's and our method means, per agent and setting.

    Columns ``agent, substrate, paper_measure, our_measure, methods, n, n_eff`` (our fewest states and
    effective states of a common method), ``spearman, spearman_p, kendall, kendall_p, paper_best,
    our_best`` (best non-random common method), ``paper_random_first`` / ``our_random_first`` (the random
    map has the highest mean of the common methods) and ``paper_random_last`` / ``our_random_last`` (the lowest).
    """
    from scipy.stats import kendalltau, spearmanr

    rows = []
    for (agent, sub, pm), g in side.groupby(["agent", "substrate", "paper_measure"], sort=False):
        g = g.dropna(subset=["our_mean"])
        rho = tau = p_rho = p_tau = np.nan
        if len(g) >= 3 and g["our_mean"].nunique() > 1:
            rho, p_rho = spearmanr(g["paper_mean"], g["our_mean"])
            tau, p_tau = kendalltau(g["paper_mean"], g["our_mean"])
        gi = g.set_index("method")
        row = {"agent": agent, "substrate": sub, "paper_measure": pm, "our_measure": g["our_measure"].iloc[0],
               "methods": len(g), "n": int(g["n"].min()) if len(g) else 0,
               "n_eff": float(g["n_eff"].min()) if len(g) else np.nan, "spearman": float(rho),
               "spearman_p": float(p_rho), "kendall": float(tau), "kendall_p": float(p_tau)}
        for who in ("paper", "our"):
            means = gi[f"{who}_mean"]
            row[f"{who}_best"] = best_non_random(means)
            for end, pick in (("first", means.idxmax), ("last", means.idxmin)):
                row[f"{who}_random_{end}"] = bool(pick() == "random") if "random" in gi.index else None
        rows.append(row)
    return pd.DataFrame(rows)


def agreement_counts(agreements: Mapping[str, pd.DataFrame], *, min_ess: float = MIN_ESS) -> pd.DataFrame:
    """Per source (``{label: rank_agreement}``) and agent: the states, effective states, common methods and
    settings, in how many settings the orders agree significantly (Spearman ρ > 0, p < 0.05, on means worth
    at least ``min_ess`` effective states each; ``withheld``: the settings below that), the best non-random
    method is the same, whether the random map comes last agrees, and the random map comes first (ours;
    and the paper's too)."""
    rows = []
    for source, a in agreements.items():
        for agent, g in a.groupby("agent", sort=False):
            rl = g.dropna(subset=["paper_random_last", "our_random_last"])
            ours_first = g["our_random_first"].eq(True)
            enough = g["n_eff"] >= min_ess
            rows.append({"source": source, "agent": agent, "states": int(g["n"].min()), "ess": float(g["n_eff"].min()),
                         "methods": int(g["methods"].max()), "settings": len(g),
                         "significant": int(((g["spearman_p"] < 0.05) & (g["spearman"] > 0) & enough).sum()),
                         "withheld": int((~enough).sum()), "same best": int((g["paper_best"] == g["our_best"]).sum()),
                         "random last agrees": int((rl["paper_random_last"] == rl["our_random_last"]).sum()),
                         "random first": int(ours_first.sum()),
                         "random first, paper too": int((ours_first & g["paper_random_first"].eq(True)).sum())})
    return pd.DataFrame(rows)


def stored_agreement(rows: pd.DataFrame, game: str) -> pd.DataFrame:
    """:func:`rank_agreement` of the study's stored insertion ``rows`` (:func:`saliency_study.paper.stored_rows`,
    any games) on ``game``, over every state they hold (its ``n`` and ``n_eff`` say how many); empty without any."""
    t = rows[(rows["game"] == game) & (rows["experiment"] == "insertion")] if len(rows) else rows
    if t.empty:
        return pd.DataFrame()
    return rank_agreement(side_by_side(auc_summary(t, n_resamples=1), game))  # the ranks of the means: no CI needed


def study_agreement(game: str, *, study_profile: str = "full", seed: int = 0, results_dir=RESULTS_DIR) -> pd.DataFrame:
    """:func:`stored_agreement` of the packs of ``study_profile`` (computing nothing); empty when the study
    has no insertion units of ``game``."""
    rows = huber.stored_rows(study_profile, [game], experiments=("insertion", "deletion"), preset="dqn", seed=seed,
                             results_dir=results_dir, packed_only=True)
    return stored_agreement(rows, game)


# -- the two factors ------------------------------------------------------------------------------

def _spearman(a: pd.Series, b: pd.Series) -> float:
    from scipy.stats import spearmanr

    both = pd.concat([a, b], axis=1, join="inner").dropna()
    if len(both) < 3 or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan")
    return float(spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0])


def factors(summary: pd.DataFrame) -> pd.DataFrame:
    """Huber et al.'s two factors under insertion, in their tables (one source per game) and for our agents.

    One row per source and substrate: ``source`` (``"paper"`` or ``"ours"``), ``agent`` (the paper's
    game, or our agent's spec), ``substrate``, ``n`` (states), ``best_value, best_action`` (best non-random
    method under the value-role and the action-role measure, :data:`~saliency_study.degradation.MEASURE_ROLE`),
    ``rho_roles`` (Spearman ρ of the method means under the two measures: factor 1), ``rho_black_value``,
    ``rho_black_action`` (ρ with the black substrate's order under each measure: factor 2), and
    ``random_first_value``, ``random_first_action`` (the random map has the highest mean of all methods). An
    agent whose value-role measure is degenerate is left out.
    """
    games = {g: i for i, g in enumerate(huber.GAMES.values())}  # the row order of the paper's tables
    paper = PAPER_AUC.sort_values("game", key=lambda c: c.map(games), kind="stable")
    paper = paper.assign(source="paper", agent=paper["game"])
    ours = summary[summary["experiment"] == "insertion"].assign(source="ours")
    rows = []
    for (source, agent), s in pd.concat([paper, ours], ignore_index=True).groupby(["source", "agent"], sort=False):
        roles = {MEASURE_ROLE.get(m): m for m in dict.fromkeys(s["measure"]) if m in MEASURE_ROLE}
        if roles.get("value") in DEGENERATE_MEASURES or len(roles) < 2:
            continue
        means = s.set_index(["substrate", "measure", "method"])["mean"]
        for sub in [x for x in ("black", "random", "blur") if x in set(s["substrate"])]:
            m = {role: means.loc[(sub, measure)] for role, measure in roles.items()}
            black = {role: means.loc[("black", measure)] for role, measure in roles.items()}
            rows.append({"source": source, "agent": agent, "substrate": sub, "n": int(s["n"].min()),
                         **{f"best_{role}": best_non_random(m[role]) for role in ("value", "action")},
                         "rho_roles": _spearman(m["value"], m["action"]),
                         **{f"rho_black_{role}": np.nan if sub == "black" else _spearman(m[role], black[role])
                            for role in ("value", "action")},
                         **{f"random_first_{role}": bool(m[role].idxmax() == "random") for role in ("value", "action")}})
    return pd.DataFrame(rows)


def paper_factor_counts(table: pd.DataFrame) -> dict[str, object]:
    """What :func:`factors` says of Huber et al.'s four games: games whose best method differs between the
    measures (per substrate) and between the substrates (per role), the games where SARFA is best under black
    insertion with the advantage, and where the random map has the highest mean under random insertion with
    the advantage (the games' names, comma-separated)."""
    p = table[table["source"] == "paper"].set_index(["agent", "substrate"])
    at = {sub: p.xs(sub, level="substrate") for sub in PAPER_SUBSTRATES}
    return {"games": p.index.get_level_values(0).nunique(),
            **{f"roles_differ_{sub}": int((t["best_value"] != t["best_action"]).sum()) for sub, t in at.items()},
            **{f"substrates_differ_{role}": int((at["black"][f"best_{role}"] != at["random"][f"best_{role}"]).sum())
               for role in ("value", "action")},
            "sarfa_best": ", ".join(huber.GAME_LABELS[g] for g in at["black"].index[at["black"]["best_action"] == "sarfa"]),
            "random_first": ", ".join(huber.GAME_LABELS[g] for g in at["random"].index[at["random"]["random_first_action"]])}


# -- per game --------------------------------------------------------------------------------------

def insertion_aucs(study_profile: str = "full", games: Sequence[str] = huber.GAME_ORDER, *, seed: int = 0,
                   results_dir=RESULTS_DIR, methods: Sequence[str] = PAPER_METHODS) -> pd.DataFrame:
    """Per-state insertion AUCs of the study's DQN agents in the paper's settings (black and random substrate,
    Q-ratio and advantage, the paper's methods), read from the packs of ``study_profile`` (a game the study
    has not run has no rows; ``methods``: the paper's, or e.g. with its §6.2 ablation's). Columns ``agent, game,
    substrate, measure, method, state, value``."""
    t = huber.stored_rows(study_profile, games, experiments=("insertion", "deletion"), preset="dqn", seed=seed,
                          results_dir=results_dir, packed_only=True)
    t = t[(t["experiment"] == "insertion") & t["step"].isna() & t["measure"].isin(["q_ratio_auc", "advantage_auc"])]
    t = t[t["substrate"].isin(PAPER_SUBSTRATES) & t["method"].isin(methods)]
    t = t.assign(measure=t["measure"].str.removesuffix("_auc"))
    return t[["agent", "game", "substrate", "measure", "method", "state", "value"]].reset_index(drop=True)


def _paper() -> pd.DataFrame:
    p = huber.paper_insertion("main")
    return p[p["method"].isin(PAPER_METHODS)]


def per_game(aucs: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of the insertion AUCs: every game and setting of the paper,
    in its order; ``verdict`` is ``"not yet run"`` where the study has no states of the game."""
    t = huber.compare_per_game(aucs, _paper(), KEYS, confidence=confidence)
    order = {"substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}, "measure": {"q_ratio": 0, "advantage": 1},
             "method": {m: i for i, m in enumerate(PAPER_METHODS)}, "game": {g: i for i, g in enumerate(huber.GAME_ORDER)}}
    return t.sort_values(["game", *KEYS], key=lambda c: c.map(order[c.name])).reset_index(drop=True)


def pooled(aucs: pd.DataFrame) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` of the insertion AUCs over the games we have run (99 % CI)."""
    return huber.compare_pooled(aucs, _paper(), KEYS, confidence=0.99)

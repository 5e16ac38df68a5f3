"""Chapter 4: rankings of the methods by AUC, the paper's order beside ours, and the sentences on both.

The rows come from :func:`saliency_book.ch4_degradation.degradation_results` and the AUC means from
:func:`saliency_book.ch4_degradation.auc_summary`; nothing here scores a map.

* :func:`rankings`, :func:`ranking_detail`, :func:`significance_summary`: rankings with Holm-corrected
  paired block-bootstrap tests (:func:`saliency_lib.metrics.ranking_table`) per setting, on at
  least :data:`~saliency_study.evidence.MIN_STATES` states and never on a measure of
  :data:`~saliency_study.evidence.DEGENERATE_MEASURES`.
* :func:`side_by_side`, :func:`rank_agreement`, :func:`comparison_summary`: the paper's numbers
  beside ours for one game, the rank correlations between the two, and the sentence on them.
* :func:`factors_summary`, :func:`paper_factors_summary`: Huber et al.'s two factors (measure and
  substrate), in our numbers and in theirs.

Functions whose input is missing return a :class:`~saliency_book.common.Note`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from saliency_book.ch4_degradation import (
    MEASURE_ROLE,
    PAPER_ANALOGUE,
    PAPER_AUC,
    PAPER_GAMES,
    PAPER_METHODS,
    PAPER_SUBSTRATES,
    agent_label,
    auc_rows,
    best_non_random,
    measure_label,
    measures_of,
    no_agent,
    notes_pass,
    pick_agent,
    short_label,
)
from saliency_book.common import Note, fmt2, join_words
from saliency_study.evidence import DEGENERATE_MEASURES, MIN_STATES, enough_states, too_few
from saliency_study.paper import GAME_LABELS

__all__ = ["rankings", "vs_random", "ranking_detail", "significance_summary", "side_by_side", "rank_agreement",
           "comparison_summary", "factors_summary", "paper_factors_summary"]


# -- rankings --------------------------------------------------------------------------------------

@notes_pass
def rankings(results: pd.DataFrame, *, alpha: float = 0.05, confidence: float = 0.95, n_resamples: int = 2000,
             seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_lib.metrics.ranking_table` of the AUC per agent, experiment, substrate and measure.

    Insertion AUCs rank higher-is-better, deletion AUCs lower-is-better. The paired tests are
    block-bootstrap tests in the order of the states, and a setting with fewer than
    :data:`~saliency_study.evidence.MIN_STATES` states gets no significant difference. Measures
    of :data:`~saliency_study.evidence.DEGENERATE_MEASURES` are not ranked. Returns the ranking
    tables stacked, with the setting columns ``agent, experiment, substrate, measure`` in front.
    """
    from saliency_lib.metrics import ranking_table

    t = auc_rows(results)
    t = t[~t["measure"].isin(list(DEGENERATE_MEASURES))]
    if t.empty:
        return Note("No insertion or deletion AUCs on a measure that can be ranked.", title="Nothing to rank")
    parts = []
    for (agent, exp, sub, meas), g in t.groupby(["agent", "experiment", "substrate", "measure"], sort=False):
        r = ranking_table(g, higher_is_better=bool(g["higher_is_better"].iloc[0]), alpha=alpha,
                          confidence=confidence, n_resamples=n_resamples, seed=seed, test="block", min_n=MIN_STATES)
        parts.append(r.assign(agent=agent, experiment=exp, substrate=sub, measure=meas,
                              higher_is_better=bool(g["higher_is_better"].iloc[0])))
    out = pd.concat(parts, ignore_index=True)
    front = ["agent", "experiment", "substrate", "measure"]
    return out[front + [c for c in out.columns if c not in front]]


def _top_group(r: pd.DataFrame) -> list[str]:
    """Methods that no method beats significantly."""
    return r.loc[r["worse_than"] == "", "method"].tolist()


def vs_random(row) -> int:
    """+1: significantly better than the random map; −1: significantly worse; 0: neither."""
    if "random" in str(row["better_than"]).split(", "):
        return 1
    if "random" in str(row["worse_than"]).split(", "):
        return -1
    return 0


@notes_pass
def ranking_detail(ranks: pd.DataFrame, preset: str, experiment: str = "insertion", substrate: str = "black",
                   role: str = "value") -> pd.DataFrame | Note:
    """The full ranking table of one setting of the agent with ``preset`` (rank, mean, CI, significant differences).

    ``role`` picks the measure by :data:`MEASURE_ROLE` (``"value"``: Q-ratio or V; ``"action"``:
    advantage or policy probability). ``attrs["agent"]`` and ``attrs["measure"]`` name the setting.
    """
    agent = pick_agent(ranks, preset)
    if agent is None:
        return no_agent(preset, "ranking")
    measure = next((m for m in dict.fromkeys(ranks.loc[ranks["agent"] == agent, "measure"])
                    if MEASURE_ROLE.get(m) == role), None)
    if measure is None:
        dropped = [m for m, r in MEASURE_ROLE.items() if r == role and m in DEGENERATE_MEASURES]
        why = (f" The {join_words([measure_label(m) for m in dropped])} is not ranked: it is degenerate "
               "(see the section on the state value)." if dropped else "")
        return Note(f"{agent_label(agent)} has no ranked measure in the {role} role.{why}", title="Not ranked")
    r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == experiment) & (ranks["substrate"] == substrate)
              & (ranks["measure"] == measure)]
    lab = lambda s: ", ".join(short_label(m) for m in s.split(", ")) if s else ""  # noqa: E731
    out = pd.DataFrame({
        "Rank": r["rank"], "Method": r["method"].map(short_label), "States": r["n"], "Mean": r["mean"],
        "Std": r["std"], "CI low": r["ci_low"], "CI high": r["ci_high"],
        "Significantly better than": r["better_than"].map(lab), "Significantly worse than": r["worse_than"].map(lab),
    }).reset_index(drop=True)
    out.attrs.update(agent=agent, experiment=experiment, substrate=substrate, measure=measure)
    return out


@notes_pass
def significance_summary(ranks: pd.DataFrame, *, alpha: float = 0.05):
    """How many pairwise differences are significant per agent, with the states and their effective number (Markdown).

    Below :data:`~saliency_study.evidence.MIN_STATES` states it gives the means' order only and
    says that the states are too few for a verdict.
    """
    from IPython.display import Markdown

    out = []
    for agent, ra in ranks.groupby("agent", sort=False):
        n_states = int(ra["n"].max())
        ess = ra["n_eff"].dropna()
        ess_t = f", effective sample size {ess.min():.0f}–{ess.max():.0f}" if len(ess) else ""
        n_set = ra.groupby(["experiment", "substrate", "measure"]).ngroups
        rnd_first = int(((ra["method"] == "random") & (ra["rank"] == 1)).sum())
        head = f"**{agent_label(agent)}** ({n_states} states{ess_t}): "
        tail = f"The random map has the best mean AUC of all methods in {rnd_first} of {n_set} settings."
        if not enough_states(int(ra["n"].min())):
            out.append(head + f"{too_few(int(ra['n'].min()))} on which method is better, so the ranks below are only "
                       f"the order of the means (a verdict needs {MIN_STATES} states). " + tail)
            continue
        n_pairs = n_sig = 0
        for _, r in ra.groupby(["experiment", "substrate", "measure"], sort=False):
            k = len(r)
            n_pairs += k * (k - 1) // 2
            n_sig += int(r["better_than"].map(lambda s: len(s.split(", ")) if s else 0).sum())
        beat = ra[ra["method"] != "random"].apply(vs_random, axis=1)
        out.append(head + f"{n_sig} of {n_pairs} pairwise differences ({100 * n_sig / max(n_pairs, 1):.0f} %) are "
                   f"significant at a family-wise level of {alpha:g} per setting (paired block-bootstrap tests, Holm); "
                   f"a method beats the random map significantly in {int((beat == 1).sum())} and loses to it "
                   f"significantly in {int((beat == -1).sum())} of {len(beat)} method × setting cells. " + tail)
    dropped = [measure_label(m) for m in DEGENERATE_MEASURES]
    out.append(f"The {join_words(dropped)} is not ranked: it is degenerate (see the section on the state value).")
    return Markdown("\n\n".join(out))


# -- beside the paper ------------------------------------------------------------------------------

@notes_pass
def side_by_side(summary: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """The paper's insertion AUCs of ``game`` next to ours, for the methods both have.

    Returns
    -------
    DataFrame or Note
        One row per (agent, substrate, paper measure, method): ``agent, substrate, paper_measure,
        our_measure, method, paper_mean, paper_std, our_mean, our_std, n, paper_rank, our_rank``
        (rank 1 = highest AUC among the common methods of the setting). A Note if the paper has
        no table for ``game``.
    """
    if game not in PAPER_GAMES:
        return Note(f"Huber et al. evaluated {join_words(list(PAPER_GAMES))}, not {game}; there is nothing to put beside "
                    "our numbers.", title="Not in the paper")
    paper = PAPER_AUC[PAPER_AUC["game"] == game]
    ours = summary[(summary["experiment"] == "insertion") & summary["substrate"].isin(PAPER_SUBSTRATES)]
    ours = ours[ours["method"].isin(PAPER_METHODS)].assign(paper_measure=lambda d: d["measure"].map(PAPER_ANALOGUE))
    ours = ours.dropna(subset=["paper_measure"])
    ours = ours[~ours["measure"].isin(list(DEGENERATE_MEASURES))]  # not compared by rank: see DEGENERATE_MEASURES
    m = ours.merge(paper, left_on=["substrate", "paper_measure", "method"], right_on=["substrate", "measure", "method"],
                   suffixes=("_ours", "_paper"))
    out = pd.DataFrame({
        "agent": m["agent"], "substrate": m["substrate"], "paper_measure": m["paper_measure"],
        "our_measure": m["measure_ours"], "method": m["method"], "paper_mean": m["mean_paper"],
        "paper_std": m["std_paper"], "our_mean": m["mean_ours"], "our_std": m["std_ours"], "n": m["n_ours"]})
    key = ["agent", "substrate", "paper_measure"]
    out["paper_rank"] = out.groupby(key)["paper_mean"].rank(ascending=False, method="min").astype(int)
    out["our_rank"] = out.groupby(key)["our_mean"].rank(ascending=False, method="min").astype("Int64")
    order = {"method": {m: i for i, m in enumerate(PAPER_METHODS)}, "paper_measure": {"q_ratio": 0, "advantage": 1},
             "substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}}
    agents = {a: i for i, a in enumerate(dict.fromkeys(out["agent"]))}
    return out.sort_values(key + ["method"], key=lambda c: c.map(order.get(c.name, agents))).reset_index(drop=True)


def rank_agreement(side: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Spearman ρ and Kendall τ between the paper's and our method means, per agent and setting.

    Returns
    -------
    DataFrame or Note
        Columns ``agent, substrate, paper_measure, our_measure, methods, n`` (our fewest states of a
        common method), ``spearman, spearman_p, kendall, kendall_p, paper_best, our_best`` (best
        non-random common method) and
        ``paper_random_last`` / ``our_random_last`` (the random map has the lowest mean).
    """
    from scipy.stats import kendalltau, spearmanr

    if isinstance(side, Note):
        return side
    rows = []
    for (agent, sub, pm), g in side.groupby(["agent", "substrate", "paper_measure"], sort=False):
        g = g.dropna(subset=["our_mean"])
        rho = tau = p_rho = p_tau = np.nan
        if len(g) >= 3 and g["our_mean"].nunique() > 1:
            rho, p_rho = spearmanr(g["paper_mean"], g["our_mean"])
            tau, p_tau = kendalltau(g["paper_mean"], g["our_mean"])
        gi = g.set_index("method")
        rows.append({"agent": agent, "substrate": sub, "paper_measure": pm, "our_measure": g["our_measure"].iloc[0],
                     "methods": len(g), "n": int(g["n"].min()) if len(g) else 0,
                     "spearman": float(rho), "spearman_p": float(p_rho), "kendall": float(tau),
                     "kendall_p": float(p_tau), "paper_best": best_non_random(gi["paper_mean"]),
                     "our_best": best_non_random(gi["our_mean"]),
                     "paper_random_last": bool(gi["paper_mean"].idxmin() == "random") if "random" in gi.index else None,
                     "our_random_last": bool(gi["our_mean"].idxmin() == "random") if "random" in gi.index else None})
    return pd.DataFrame(rows)


def comparison_summary(agreement: pd.DataFrame | Note, game: str):
    """What reproduced and what did not, formatted from :func:`rank_agreement` (Markdown, or a Note)."""
    from IPython.display import Markdown

    if isinstance(agreement, Note):
        return agreement
    out = []
    for agent, a in agreement.groupby("agent", sort=False):
        analogue = bool((a["our_measure"] != a["paper_measure"]).any())
        same_best = a[a["paper_best"] == a["our_best"]]
        pos = a[a["spearman"] > 0]
        role = ", measures compared by role, so only the ranks are comparable" if analogue else ""
        text = (f"**{agent_label(agent)}** ({int(a['n'].min())} states{role}): "
                f"over the {int(a['methods'].max())} methods that both studies ran, our order of the mean AUCs agrees "
                f"positively with the paper's {game} order in {len(pos)} of {len(a)} settings")
        rho = a["spearman"].dropna()
        if len(rho):
            text += (f" (Spearman ρ from {fmt2(rho.min())} to {fmt2(rho.max())}, Kendall τ from {fmt2(a['kendall'].min())} "
                     f"to {fmt2(a['kendall'].max())})")
        sig = a[(a["spearman_p"] < 0.05) & (a["spearman"] > 0)]
        text += f"; the agreement is significant at 5 % in {len(sig)} of them."
        if len(same_best):
            settings = [f"{r.substrate} insertion with the {measure_label(r.our_measure)} ({short_label(r.our_best)})"
                        for r in same_best.itertuples()]
            text += f" The best non-random common method is the same as in the paper for {join_words(settings)}."
        else:
            text += " The best non-random common method differs from the paper's in every setting."
        rl = a.dropna(subset=["paper_random_last", "our_random_last"])
        agree_rl = int((rl["paper_random_last"] == rl["our_random_last"]).sum())
        text += (f" Whether the random map comes last agrees with the paper in {agree_rl} of {len(rl)} settings "
                 f"(last in the paper: {int(rl['paper_random_last'].sum())}; in ours: {int(rl['our_random_last'].sum())}).")
        out.append(text)
    return Markdown("\n\n".join(out))


def _winner(summary: pd.DataFrame, agent: str, experiment: str, substrate: str, measure: str) -> str | None:
    g = summary[(summary["agent"] == agent) & (summary["experiment"] == experiment) & (summary["substrate"] == substrate)
                & (summary["measure"] == measure)]
    if g.empty:
        return None
    return best_non_random(g.set_index("method")["mean"], bool(g["higher_is_better"].iloc[0]))


def _order_corr(summary: pd.DataFrame, agent: str, a: tuple[str, str, str], b: tuple[str, str, str]) -> float:
    """Spearman ρ between the method means of two settings (experiment, substrate, measure) of one agent."""
    from scipy.stats import spearmanr

    s = summary[summary["agent"] == agent].set_index(["experiment", "substrate", "measure", "method"])["mean"]
    try:
        x, y = s.loc[a], s.loc[b]
    except KeyError:
        return float("nan")
    both = pd.concat([x, y], axis=1, join="inner").dropna()
    if len(both) < 3 or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan")
    return float(spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0])


@notes_pass
def factors_summary(summary: pd.DataFrame, ranks: pd.DataFrame):
    """The two factors in our insertion results, formatted from the numbers (Markdown).

    Factor 1, what is explained: per substrate, the best non-random method under the value-role
    and the action-role measure (:data:`MEASURE_ROLE`) and the rank correlation of the method
    means between the two. Factor 2, the substrate: per measure, the best method on each substrate
    and the rank correlation between the black and random substrates (and blur).
    """
    from IPython.display import Markdown

    out = []
    for agent in dict.fromkeys(summary["agent"]):
        ms = [m for m in measures_of(summary.assign(step=pd.NA, measure=summary["measure"] + "_auc"), agent)
              if m in MEASURE_ROLE]
        vm = next((m for m in ms if MEASURE_ROLE[m] == "value"), None)
        am = next((m for m in ms if MEASURE_ROLE[m] == "action"), None)
        subs = [s for s in ("black", "random", "blur")
                if s in set(summary.loc[(summary["agent"] == agent) & (summary["experiment"] == "insertion"), "substrate"])]
        if vm in DEGENERATE_MEASURES:
            out.append(f"**{agent_label(agent)}**: the two factors are not read off, because its value-role measure, "
                       f"the {measure_label(vm)}, is degenerate and not ranked (see the section on the state value).")
            continue
        if vm is None or am is None or not subs:
            continue
        parts, differ = [], 0
        for s in subs:
            wv, wa = _winner(summary, agent, "insertion", s, vm), _winner(summary, agent, "insertion", s, am)
            differ += wv != wa
            rho = _order_corr(summary, agent, ("insertion", s, vm), ("insertion", s, am))
            rho_t = f", ρ = {fmt2(rho)}" if np.isfinite(rho) else ""
            parts.append(f"{s}: {short_label(wv)} vs {short_label(wa)}{rho_t}")
        f1 = (f"**{agent_label(agent)}, what is explained.** The best non-random method under the "
              f"{measure_label(vm)} and under the {measure_label(am)} differs on {differ} of {len(subs)} substrates "
              f"({'; '.join(parts)}; ρ: Spearman correlation of the method means under the two measures).")
        parts, changes = [], 0
        for m in (vm, am):
            wins = {s: _winner(summary, agent, "insertion", s, m) for s in subs}
            changes += len(set(wins.values())) > 1
            rho = _order_corr(summary, agent, ("insertion", "black", m), ("insertion", "random", m))
            rho_t = f"; black vs random ρ = {fmt2(rho)}" if np.isfinite(rho) else ""
            parts.append(f"{measure_label(m)}: " + ", ".join(f"{short_label(w)} on {s}" for s, w in wins.items()) + rho_t)
        f2 = (f"**{agent_label(agent)}, the substrate.** The best non-random method changes with the substrate for "
              f"{changes} of 2 measures ({'; '.join(parts)}).")
        r = ranks[(ranks["agent"] == agent) & (ranks["experiment"] == "insertion")]
        groups = r.groupby(["substrate", "measure"], sort=False)
        if all(len(_top_group(g)) == len(g) for _, g in groups):
            few = "" if r.empty or enough_states(int(r["n"].min())) else f"; {too_few(int(r['n'].min()))}"
            f3 = ("No method is significantly better than another in any insertion setting (Holm-corrected paired "
                  f"block-bootstrap tests{few}).")
        else:
            tops = [f"{s}/{measure_label(m)}: " + (f"all {len(g)} methods" if len(_top_group(g)) == len(g)
                                                    else join_words([short_label(x) for x in _top_group(g)]))
                    for (s, m), g in groups]
            f3 = "Top groups (no method significantly better, Holm-corrected paired block-bootstrap tests): " + "; ".join(tops) + "."
        n = int(summary.loc[summary["agent"] == agent, "n"].min())
        gate = [] if enough_states(n) else [f"*{too_few(n).capitalize()}: these sentences give the order of the means "
                                             "only.*"]
        out.append(" ".join([*gate, f1, f2, f3]))
    if not out:
        return Markdown("The results hold no pair of value and action measures, so the two factors cannot be read off.")
    return Markdown("\n\n".join(out))


def paper_factors_summary():
    """The two factors in Huber et al.'s own tables (:data:`PAPER_AUC`), formatted from their numbers (Markdown)."""
    from IPython.display import Markdown

    p = PAPER_AUC.set_index(["game", "substrate", "measure", "method"])["mean"].sort_index()
    games = list(PAPER_GAMES)

    def best(g, s, m):
        return best_non_random(p.loc[(g, s, m)])

    f1 = {s: [g for g in games if best(g, s, "q_ratio") != best(g, s, "advantage")] for s in PAPER_SUBSTRATES}
    f2 = {m: [g for g in games if best(g, "black", m) != best(g, "random", m)] for m in ("q_ratio", "advantage")}
    sarfa = [g for g in games if best(g, "black", "advantage") == "sarfa"]
    rnd = [g for g in games if p.loc[(g, "random", "advantage")].idxmax() == "random"]
    text = (f"In Huber et al.'s tables, the best non-random method differs between the Q-value and the advantage measure "
            f"in {len(f1['black'])} of {len(games)} games under black insertion and in {len(f1['random'])} of "
            f"{len(games)} under random insertion; it differs between the black and the random substrate in "
            f"{len(f2['q_ratio'])} of {len(games)} games for the Q-value and {len(f2['advantage'])} of {len(games)} "
            f"for the advantage. SARFA is best under black insertion with the advantage in "
            f"{join_words([GAME_LABELS[g] for g in sarfa])}; under random insertion with the advantage the random map "
            f"has the highest mean of all columns in {join_words([GAME_LABELS[g] for g in rnd])}.")
    return Markdown(text)


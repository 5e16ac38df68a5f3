"""Chapter 4 against Huber et al.: method orders, the two factors, per-game AUCs, the state value V, and the
advantage stream.

:mod:`saliency_study.paper` computes the per-game comparisons and their verdicts; this module reads the
chapter's and the stored study's AUCs into them, and computes the rank agreements, the factors, the
degeneracy check behind :data:`saliency_study.evidence.DEGENERATE_MEASURES` and the paper's benchmark on
the advantage stream alone of our dueling DQN agent (``advstream:``).
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
    DegradationChapter,
    agent_label,
    auc_summary,
    best_non_random,
    notes_pass,
    pick_agent,
)
from saliency_book.common import Note
from saliency_study import paper as huber
from saliency_study.evidence import DEGENERATE_MEASURES, enough_states, too_few

__all__ = ["side_by_side", "rank_agreement", "agreement_counts", "stored_agreement", "study_agreement", "factors",
           "paper_factor_counts", "insertion_aucs", "per_game", "pooled", "verdict_counts", "KEYS", "CURVE_COLUMNS",
           "mean_curve_table", "summary_curves", "measure_degeneracy", "SCHEME", "stream_spec", "stream_results",
           "clean_outputs", "stream_agreement", "stream_better"]

KEYS = ("substrate", "measure", "method")
"""The columns of one insertion setting of the paper's tables."""


# -- method orders ----------------------------------------------------------------------------------

@notes_pass
def side_by_side(summary: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """The paper's insertion AUCs of ``game`` next to ours (:func:`~saliency_book.ch4_degradation.auc_summary`),
    for the methods both have: one row per (agent, substrate, paper measure, method) with ``our_measure,
    paper_mean, paper_std, our_mean, our_std, n, paper_rank, our_rank`` (1: highest among the common methods)."""
    if game not in PAPER_GAMES:
        return Note(f"Huber et al. evaluated {', '.join(PAPER_GAMES)}, not {game}; there is nothing to put beside "
                    "our numbers.", title="Not in the paper")
    ours = summary[(summary["experiment"] == "insertion") & summary["substrate"].isin(PAPER_SUBSTRATES)
                   & summary["method"].isin(PAPER_METHODS) & ~summary["measure"].isin(list(DEGENERATE_MEASURES))]
    ours = ours.assign(paper_measure=ours["measure"].map(PAPER_ANALOGUE)).dropna(subset=["paper_measure"])
    m = ours.merge(PAPER_AUC[PAPER_AUC["game"] == game], left_on=["substrate", "paper_measure", "method"],
                   right_on=["substrate", "measure", "method"], suffixes=("_ours", "_paper"))
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


@notes_pass
def rank_agreement(side: pd.DataFrame) -> pd.DataFrame:
    """Spearman ρ and Kendall τ between the paper's and our method means, per agent and setting.

    Columns ``agent, substrate, paper_measure, our_measure, methods, n`` (our fewest states of a common
    method), ``spearman, spearman_p, kendall, kendall_p, paper_best, our_best`` (best non-random common
    method), ``paper_random_first`` / ``our_random_first`` (the random map has the highest mean of the
    common methods) and ``paper_random_last`` / ``our_random_last`` (the lowest).
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
               "methods": len(g), "n": int(g["n"].min()) if len(g) else 0, "spearman": float(rho),
               "spearman_p": float(p_rho), "kendall": float(tau), "kendall_p": float(p_tau)}
        for who in ("paper", "our"):
            means = gi[f"{who}_mean"]
            row[f"{who}_best"] = best_non_random(means)
            for end, pick in (("first", means.idxmax), ("last", means.idxmin)):
                row[f"{who}_random_{end}"] = bool(pick() == "random") if "random" in gi.index else None
        rows.append(row)
    return pd.DataFrame(rows)


def agreement_counts(agreements: dict[str, pd.DataFrame | Note]) -> pd.DataFrame | Note:
    """Per source (``{label: rank_agreement}``) and agent: the states, common methods and settings, and in how
    many settings the orders agree significantly (Spearman ρ > 0, p < 0.05), the best non-random method is
    the same, whether the random map comes last agrees, and the random map comes first (ours; and the paper's too)."""
    rows = []
    for source, a in agreements.items():
        if isinstance(a, Note):
            continue
        for agent, g in a.groupby("agent", sort=False):
            rl = g.dropna(subset=["paper_random_last", "our_random_last"])
            ours_first = g["our_random_first"].eq(True)
            rows.append({"source": source, "agent": agent, "states": int(g["n"].min()),
                         "methods": int(g["methods"].max()), "settings": len(g),
                         "significant": int(((g["spearman_p"] < 0.05) & (g["spearman"] > 0)).sum()),
                         "same best": int((g["paper_best"] == g["our_best"]).sum()),
                         "random last agrees": int((rl["paper_random_last"] == rl["our_random_last"]).sum()),
                         "random first": int(ours_first.sum()),
                         "random first, paper too": int((ours_first & g["paper_random_first"].eq(True)).sum())})
    return pd.DataFrame(rows) if rows else Note("No rank agreement to count.", title="No results")


def stored_agreement(rows: pd.DataFrame, game: str) -> pd.DataFrame | Note:
    """:func:`rank_agreement` of the study's stored insertion ``rows`` (:func:`saliency_study.paper.stored_rows`,
    any games) on ``game``, over every state they hold (its ``n`` says how many); a Note without any."""
    t = rows[(rows["game"] == game) & (rows["experiment"] == "insertion")] if len(rows) else rows
    if t.empty:
        return Note(f"The paper-scale study has no insertion units of {game} yet.", title=huber.NOT_RUN.capitalize())
    return rank_agreement(side_by_side(auc_summary(t, n_resamples=1), game))  # the ranks of the means: no CI needed


def study_agreement(cfg: DegradationChapter, game: str) -> pd.DataFrame | Note:
    """:func:`stored_agreement` of the packs of ``cfg.study_profile`` (computing nothing); a Note below
    :data:`~saliency_study.evidence.MIN_STATES` states of a common method."""
    rows = huber.stored_rows(cfg.study_profile, [game], experiments=("insertion", "deletion"), preset="dqn",
                             seed=cfg.seed, results_dir=cfg.results_dir, packed_only=True)
    agreement = stored_agreement(rows, game)
    if isinstance(agreement, Note) or enough_states(n := int(agreement["n"].min())):
        return agreement
    return Note(f"The paper-scale study has {too_few(n)} on {game} so far.", title="Too few states")


# -- the two factors ------------------------------------------------------------------------------

def _spearman(a: pd.Series, b: pd.Series) -> float:
    from scipy.stats import spearmanr

    both = pd.concat([a, b], axis=1, join="inner").dropna()
    if len(both) < 3 or both.iloc[:, 0].nunique() < 2 or both.iloc[:, 1].nunique() < 2:
        return float("nan")
    return float(spearmanr(both.iloc[:, 0], both.iloc[:, 1])[0])


@notes_pass
def factors(summary: pd.DataFrame) -> pd.DataFrame:
    """Huber et al.'s two factors under insertion, in their tables (one source per game) and for our agents.

    One row per source and substrate: ``source, n`` (states), ``best_value, best_action`` (best non-random method
    under the value-role and the action-role measure, :data:`~saliency_book.ch4_degradation.MEASURE_ROLE`),
    ``rho_roles`` (Spearman ρ of the method means under the two measures: factor 1), ``rho_black_value``,
    ``rho_black_action`` (ρ with the black substrate's order under each measure: factor 2), and
    ``random_first_value``, ``random_first_action`` (the random map has the highest mean of all methods). An
    agent whose value-role measure is degenerate is left out.
    """
    paper = PAPER_AUC.sort_values("game", key=lambda c: c.map(list(PAPER_GAMES).index), kind="stable")
    paper = paper.assign(agent=paper["game"].map(lambda g: f"Huber et al.: {PAPER_GAMES[g]}"))
    ours = summary[summary["experiment"] == "insertion"].assign(agent=summary["agent"].map(lambda a: f"Ours: {agent_label(a)}"))
    rows = []
    for source, s in pd.concat([paper, ours], ignore_index=True).groupby("agent", sort=False):
        roles = {MEASURE_ROLE.get(m): m for m in dict.fromkeys(s["measure"]) if m in MEASURE_ROLE}
        if roles.get("value") in DEGENERATE_MEASURES or len(roles) < 2:
            continue
        means = s.set_index(["substrate", "measure", "method"])["mean"]
        for sub in [x for x in ("black", "random", "blur") if x in set(s["substrate"])]:
            m = {role: means.loc[(sub, measure)] for role, measure in roles.items()}
            black = {role: means.loc[("black", measure)] for role, measure in roles.items()}
            rows.append({"source": source, "substrate": sub, "n": int(s["n"].min()),
                         **{f"best_{role}": best_non_random(m[role]) for role in ("value", "action")},
                         "rho_roles": _spearman(m["value"], m["action"]),
                         **{f"rho_black_{role}": np.nan if sub == "black" else _spearman(m[role], black[role])
                            for role in ("value", "action")},
                         **{f"random_first_{role}": bool(m[role].idxmax() == "random") for role in ("value", "action")}})
    return pd.DataFrame(rows)


def paper_factor_counts(table: pd.DataFrame) -> dict[str, object]:
    """What :func:`factors` says of Huber et al.'s four games, for the chapter's text: games whose best method
    differs between the measures (per substrate) and between the substrates (per role), the games where
    SARFA is best under black insertion with the advantage, and where the random map has the highest mean
    under random insertion with the advantage."""
    p = table[table["source"].str.startswith("Huber et al.")].set_index(["source", "substrate"])
    games = list(dict.fromkeys(p.index.get_level_values(0)))
    at = {sub: p.xs(sub, level="substrate") for sub in PAPER_SUBSTRATES}
    name = {f"Huber et al.: {v}": huber.GAME_LABELS[k] for k, v in PAPER_GAMES.items()}
    return {"games": len(games),
            **{f"roles_differ_{sub}": int((t["best_value"] != t["best_action"]).sum()) for sub, t in at.items()},
            **{f"substrates_differ_{role}": int((at["black"][f"best_{role}"] != at["random"][f"best_{role}"]).sum())
               for role in ("value", "action")},
            "sarfa_best": ", ".join(name[g] for g in at["black"].index[at["black"]["best_action"] == "sarfa"]),
            "random_first": ", ".join(name[g] for g in at["random"].index[at["random"]["random_first_action"]])}


# -- per game --------------------------------------------------------------------------------------

def insertion_aucs(cfg: DegradationChapter, games=huber.GAME_ORDER) -> pd.DataFrame:
    """Per-state insertion AUCs of the study's DQN agents in the paper's settings (black and random substrate,
    Q-ratio and advantage, the paper's methods), read from the packs of ``cfg.study_profile`` (a game the study
    has not run has no rows). Columns ``agent, game, substrate, measure, method, state, value``."""
    t = huber.stored_rows(cfg.study_profile, games, experiments=("insertion", "deletion"), preset="dqn",
                          seed=cfg.seed, results_dir=cfg.results_dir, packed_only=True)
    t = t[(t["experiment"] == "insertion") & t["step"].isna() & t["measure"].isin(["q_ratio_auc", "advantage_auc"])]
    t = t[t["substrate"].isin(PAPER_SUBSTRATES) & t["method"].isin(PAPER_METHODS)]
    t = t.assign(measure=t["measure"].str.removesuffix("_auc"))
    return t[["agent", "game", "substrate", "measure", "method", "state", "value"]].reset_index(drop=True)


def _paper() -> pd.DataFrame:
    p = huber.paper_insertion("main")
    return p[p["method"].isin(PAPER_METHODS)]


def per_game(aucs: pd.DataFrame, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_per_game` of the insertion AUCs: every game and setting of the paper,
    in its order; ``verdict`` is ``"not yet run"`` where the study has no states of the game."""
    t = huber.compare_per_game(aucs, _paper(), KEYS, confidence=confidence, n_resamples=n_resamples, seed=seed)
    order = {"substrate": {s: i for i, s in enumerate(PAPER_SUBSTRATES)}, "measure": {"q_ratio": 0, "advantage": 1},
             "method": {m: i for i, m in enumerate(PAPER_METHODS)}, "game": {g: i for i, g in enumerate(huber.GAME_ORDER)}}
    return t.sort_values(["game", *KEYS], key=lambda c: c.map(order[c.name])).reset_index(drop=True)


def pooled(aucs: pd.DataFrame, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """:func:`~saliency_study.paper.compare_pooled` of the insertion AUCs over the games we have run (99 % CI)."""
    return huber.compare_pooled(aucs, _paper(), KEYS, confidence=0.99, n_resamples=n_resamples, seed=seed)


def verdict_counts(table: pd.DataFrame, by: str = "game") -> pd.DataFrame:
    """How many settings get each verdict, per ``by``, with the most states behind one."""
    counts = pd.crosstab(table[by], table["verdict"]).reindex(list(dict.fromkeys(table[by])))
    return counts.assign(states=table.groupby(by)["n"].max()).reset_index()


# -- the state value V ------------------------------------------------------------------------------

CURVE_COLUMNS = ("experiment", "agent", "method", "substrate", "measure", "step", "mean")
"""The columns :func:`measure_degeneracy` reads of a mean-curve table."""


def mean_curve_table(cfg: DegradationChapter, results: pd.DataFrame | Note) -> pd.DataFrame | Note:
    """Mean insertion/deletion curves (over the states) of the chapter's agents, :data:`CURVE_COLUMNS`: from
    the per-state curves of ``results`` where it holds them, else from the store's mean curves
    (:func:`saliency_lib.sweep.mean_curves`) of the chapter's stored units. Computes nothing."""
    from saliency_lib.sweep import mean_curves

    if isinstance(results, Note):
        return results
    rows = results[results["step"].notna() & results["experiment"].isin(["insertion", "deletion"])]
    if len(rows):
        return summary_curves(rows.groupby(list(CURVE_COLUMNS[:-1]), observed=True)["value"].mean().rename("mean")
                              .reset_index())
    units = huber.stored_units(cfg.profile, [cfg.game], experiments=("insertion", "deletion"), preset=None,
                               agents=list(dict.fromkeys(results["agent"])), seed=cfg.seed, results_dir=cfg.results_dir)
    return summary_curves(mean_curves(units, results_dir=cfg.results_dir) if units else
                          pd.DataFrame(columns=list(CURVE_COLUMNS)))


def summary_curves(curves: pd.DataFrame) -> pd.DataFrame:
    """The rows of a mean-curve table that :func:`measure_degeneracy` reads: the summary measures (raw outputs
    such as ``q[0]`` or ``logits[1]`` left out), columns :data:`CURVE_COLUMNS`."""
    t = curves[~curves["measure"].astype(str).str.contains("[", regex=False)]
    return t[list(CURVE_COLUMNS)].reset_index(drop=True)


@notes_pass
def measure_degeneracy(results: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame | Note:
    """Does the substrate move the measure? One row per agent, substrate and measure.

    ``results`` gives the per-state AUCs, ``curves`` the mean curves (:func:`mean_curve_table`). The
    pre-stated rule: a measure is **degenerate** on a substrate when the random map has the best mean AUC of
    all methods under insertion *and* the worst under deletion (the metric then rewards disturbing the image,
    not the map's order). Columns ``agent, substrate, measure, n`` (states), ``clean``, ``substrate_value``
    (mean of the measure on the clean state and on the substrate), ``gap_share`` (their gap over the largest
    swing of a method's mean curve), ``peak`` (highest point of a mean curve over ``|clean|``),
    ``random_insertion``, ``random_deletion`` (the random map's rank by mean AUC, 1: best, of ``methods``)
    and ``degenerate``.
    """
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
            first, last = wide[wide.columns.min()].mean(), wide[wide.columns.max()].mean()  # the path's two ends
            row.setdefault("clean", float(last if exp == "insertion" else first))
            row.setdefault("substrate_value", float(first if exp == "insertion" else last))
            swing = max(swing, float((wide.max(axis=1) - wide.min(axis=1)).max()))
            peak = max(peak, float(wide.max(axis=1).max()))
            a = mine[mine["experiment"] == exp].groupby("method")["value"].mean()
            if "random" in a.index:
                row[f"random_{exp}"] = int(a.rank(ascending=exp == "deletion", method="min")["random"])
                row["methods"] = len(a)
        if "clean" not in row:
            continue
        row["gap_share"] = abs(row["clean"] - row["substrate_value"]) / swing if swing > 0 else np.nan
        row["peak"] = peak / abs(row["clean"]) if row["clean"] else np.nan
        m = row.get("methods")
        row["degenerate"] = bool(m and row.get("random_insertion") == 1 and row.get("random_deletion") == m)
        rows.append(row)
    if not rows:
        return Note("No insertion or deletion curves in the results.", title="No curves")
    return pd.DataFrame(rows).reindex(columns=["agent", "substrate", "measure", "n", "clean", "substrate_value",
                                               "gap_share", "peak", "random_insertion", "random_deletion", "methods",
                                               "degenerate"])


# -- the advantage stream ------------------------------------------------------------------------------

SCHEME = "advstream:"
"""Agent-spec prefix of the advantage-stream reading (:func:`saliency_lib.agents.advantage_stream_agent`)."""


def stream_spec(results: pd.DataFrame | Note) -> str | Note:
    """``advstream:<spec>`` of the chapter's DQN agent, or a Note when there is none or it is not dueling."""
    from saliency_lib.agents import load_agent

    dqn = pick_agent(results, "dqn")
    if dqn is None:
        return Note("No DQN agent in this chapter's results, so there is no advantage stream to explain.",
                    title="No DQN agent")
    if not getattr(getattr(load_agent(dqn).net, "config", None), "dueling", False):
        return Note(f"The chapter's DQN agent ({dqn}) has no dueling head, so it has no separate advantage stream.",
                    title="Not a dueling agent")
    return SCHEME + str(dqn)


def stream_results(cfg: DegradationChapter, results: pd.DataFrame | Note, *, progress: bool = False
                   ) -> pd.DataFrame | Note:
    """Insertion rows of the advantage stream of the chapter's DQN agent: the paper's methods and substrates, on
    the chapter's profile's states and parameters for DQN agents (stored units are reused)."""
    from saliency_lib.sweep import SweepSpec, run_sweep
    from saliency_study.profiles import sweep_sizes

    spec = stream_spec(results)
    if isinstance(spec, Note):
        return spec
    n, chunk, params = sweep_sizes(cfg.profile, "dqn")
    methods = tuple(m for m in PAPER_METHODS if m != "random")  # the random map joins every degradation sweep
    sweep = SweepSpec(agents=(spec,), methods=methods, experiments=("insertion",), substrates=PAPER_SUBSTRATES,
                      n_states=n, chunk=chunk, seed=cfg.seed, params={m: p for m, p in params.items() if m in methods})
    return run_sweep(sweep, executor=cfg.executor, results_dir=cfg.results_dir, progress=progress).table


@notes_pass
def clean_outputs(cfg: DegradationChapter, stream: pd.DataFrame) -> pd.DataFrame:
    """The explained output on the clean states, the Q-ratio's denominator, in both readings: Q(a) and the
    un-centred A(a). One row per reading: ``reading, states, mean, min, max, negative, near_zero`` (share of
    states below 0, and with ``|output| < 0.1 · median |Q(a)|``)."""
    import torch

    from saliency_lib.agents import load_agent
    from saliency_lib.sweep import study_states

    spec = str(stream["agent"].iloc[0])
    full, adv = load_agent(spec.removeprefix(SCHEME)), load_agent(spec)
    states, _ = study_states(spec, int(stream["state"].max()) + 1, results_dir=cfg.results_dir, agent=adv)
    x, a = states.states, states.actions[:, None]
    with torch.no_grad():
        outputs = {"Q(a), the full dueling output": full(x)["q"].gather(1, a)[:, 0].numpy(),
                   "A(a), the advantage stream alone": adv(x)["q"].gather(1, a)[:, 0].numpy()}
    scale = float(np.median(np.abs(outputs["Q(a), the full dueling output"])))
    return pd.DataFrame([{"reading": k, "states": len(v), "mean": float(v.mean()), "min": float(v.min()),
                          "max": float(v.max()), "negative": float((v < 0).mean()),
                          "near_zero": float((np.abs(v) < 0.1 * scale).mean())} for k, v in outputs.items()])


@notes_pass
def stream_agreement(results: pd.DataFrame, stream: pd.DataFrame, game: str, *, confidence: float = 0.95,
                     n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame | Note:
    """:func:`rank_agreement` for the full-Q and the advantage-stream reading of the chapter's DQN agent, with
    ``reading`` (``"full Q"`` or ``"advantage stream"``) and ``paper_negative``, ``our_negative`` (the common
    methods with a negative mean AUC)."""
    dqn = pick_agent(results, "dqn")
    rows = pd.concat([results[(results["agent"] == dqn) & (results["experiment"] == "insertion")], stream],
                     ignore_index=True)
    side = side_by_side(auc_summary(rows, confidence=confidence, n_resamples=n_resamples, seed=seed), game)
    if isinstance(side, Note):
        return side
    key = ["agent", "substrate", "paper_measure"]
    neg = side.groupby(key).agg(paper_negative=("paper_mean", lambda s: int((s < 0).sum())),
                                our_negative=("our_mean", lambda s: int((s < 0).sum())))
    agreement = rank_agreement(side).merge(neg.reset_index(), on=key)
    return agreement.assign(reading=np.where(agreement["agent"].astype(str).str.startswith(SCHEME), "advantage stream",
                                             "full Q"))


def stream_better(agreement: pd.DataFrame | Note) -> dict[str, object]:
    """In how many settings the advantage stream's method order agrees better with the paper's than the full Q's
    (the higher Spearman ρ), of how many settings (``"–"`` without both readings)."""
    rho = None if isinstance(agreement, Note) else agreement.pivot_table(
        index=["substrate", "paper_measure"], columns="reading", values="spearman", dropna=False)
    if rho is None or not {"full Q", "advantage stream"} <= set(rho.columns):
        return {"better": "–", "settings": "–"}
    return {"better": int((rho["advantage stream"] > rho["full Q"]).sum()), "settings": len(rho)}
